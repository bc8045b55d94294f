import Foundation

/// One row of the results: an operation, its latency and its ratio to the baseline it must pay.
struct ResultRow: Codable, Sendable {
    var section: String
    var name: String
    var medianNanoseconds: Double
    var p99Nanoseconds: Double
    var operationsPerSecond: Double
    var baseline: String?
    var ratio: Double?
    var target: String?
    var note: String?
}

final class Report: @unchecked Sendable {
    private(set) var rows: [ResultRow] = []
    var machine: [String: String] = [:]

    func add(_ section: String, _ measurement: Measurement, baseline: Measurement? = nil, baselineScale: Double = 1,
             target: String? = nil, note: String? = nil) {
        let ratio = baseline.map { measurement.median / ($0.median * baselineScale) }
        rows.append(ResultRow(section: section, name: measurement.name, medianNanoseconds: measurement.median,
                              p99Nanoseconds: measurement.p99, operationsPerSecond: measurement.operationsPerSecond,
                              baseline: baseline.map { baselineScale == 1 ? $0.name : "\($0.name) ×\(baselineScale)" },
                              ratio: ratio, target: target, note: note))
        printRow(rows[rows.count - 1])
    }

    func addValue(_ section: String, _ name: String, value: Double, unit: String, note: String? = nil) {
        rows.append(ResultRow(section: section, name: name, medianNanoseconds: value, p99Nanoseconds: value,
                              operationsPerSecond: 0, baseline: nil, ratio: nil, target: nil,
                              note: note.map { "\($0) [\(unit)]" } ?? unit))
        let shown = unit == "ns" ? formatDuration(value) : String(format: "%.1f %@", value, unit)
        print(pad(section, 14) + pad(name, 52) + pad(shown, 12) + (note ?? ""))
    }

    func printHeader() {
        print(pad("section", 14) + pad("operation", 52) + pad("median", 12) + pad("p99", 12) + pad("ratio", 22) + "target")
        print(String(repeating: "-", count: 124))
    }

    private func printRow(_ row: ResultRow) {
        let ratio = row.ratio.map { String(format: "%.2f× %@", $0, row.baseline ?? "") } ?? ""
        print(pad(row.section, 14) + pad(row.name, 52) + pad(formatDuration(row.medianNanoseconds), 12)
              + pad(formatDuration(row.p99Nanoseconds), 12) + pad(ratio, 22) + (row.target ?? "") + (row.note.map { "  \($0)" } ?? ""))
    }

    private func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
    }

    func writeJSON(to path: String) throws {
        struct Document: Codable { var machine: [String: String]; var results: [ResultRow] }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(Document(machine: machine, results: rows)).write(to: URL(fileURLWithPath: path))
    }
}
