/// Small pieces of the CLI's English.
enum Wording {
    /// "1 credential", "3 credentials".
    static func count(_ number: Int, _ noun: String) -> String {
        "\(number) \(noun)\(number == 1 ? "" : "s")"
    }
}
