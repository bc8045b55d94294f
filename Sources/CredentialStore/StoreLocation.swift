import Foundation

/// Where a key's store lives: `--store DIR`, else `$XDG_DATA_HOME/latchkey/<name>`
/// (`~/.local/share/latchkey/<name>` when XDG_DATA_HOME is unset).
public enum StoreLocation {
    public static func directory(explicit: String?, name: String,
                                 environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let explicit { return explicit }
        return dataHome(environment: environment) + "/latchkey/" + name
    }

    /// `$XDG_DATA_HOME` when it is an absolute path, else `~/.local/share`.
    public static func dataHome(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") { return xdg }
        return (environment["HOME"] ?? NSHomeDirectory()) + "/.local/share"
    }

    /// A key name is a path component: letters, digits, '-', '_', '.'.
    public static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.count <= 64 && name != "." && name != ".." &&
            name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == ".") }
    }
}
