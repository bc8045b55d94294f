/// RFC 3339 date-times ("2025-11-30T12:00:00Z", "2024-06-01T08:30:15.5-07:30"), as passkey
/// exports carry them, parsed here rather than by Foundation's ISO8601DateFormatter: ICU under it
/// dies of SIGFPE on some inputs (a fraction of 80 digits, found by FuzzImport), and no file being
/// imported may crash the import. Strict: a four-digit year, every field in range (February 29
/// only in leap years), `T` (or `t`), `Z` or a ±HH:MM offset; fractions of a second are read and
/// dropped (the store keeps seconds).
enum InternetDateTime {
    /// Seconds since 1970-01-01T00:00:00Z; nil for anything that is not an RFC 3339 date-time.
    static func unixSeconds(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20, bytes.count <= 64 else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= bytes.count else { return nil }
            var value = 0
            for index in range {
                let byte = bytes[index]
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return value
        }
        func at(_ index: Int, _ characters: Character...) -> Bool {
            index < bytes.count && characters.contains { $0.asciiValue == bytes[index] }
        }
        guard let year = number(0..<4), at(4, "-"), let month = number(5..<7), at(7, "-"), let day = number(8..<10),
              at(10, "T", "t"), let hour = number(11..<13), at(13, ":"), let minute = number(14..<16), at(16, ":"),
              let second = number(17..<19) else { return nil }
        var index = 19
        if at(index, ".") {
            index += 1
            let start = index
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") { index += 1 }
            guard index > start else { return nil }
        }
        var offset = 0
        if at(index, "Z", "z") {
            index += 1
        } else if at(index, "+", "-") {
            guard let offsetHours = number((index + 1)..<(index + 3)), at(index + 3, ":"),
                  let offsetMinutes = number((index + 4)..<(index + 6)), offsetHours <= 23, offsetMinutes <= 59 else { return nil }
            offset = (offsetHours * 3600 + offsetMinutes * 60) * (bytes[index] == UInt8(ascii: "-") ? -1 : 1)
            index += 6
        } else {
            return nil
        }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let monthDays = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard index == bytes.count, (1...12).contains(month), (1...monthDays[month - 1]).contains(day),
              hour <= 23, minute <= 59, second <= 60 else { return nil }
        // Days from 1970-01-01 (the proleptic Gregorian calendar, years counted from March).
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * ((month + 9) % 12) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second - offset)
    }
}
