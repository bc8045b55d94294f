import CredentialStore
import Encoding
import Foundation
import KeyService
import Presence
import Rig
import SystemIO
import WebDriver

/// `latchkey rig`: many keys in one process, driven through the rig control API (docs/rig-protocol.md); `latchkey rig call METHOD [PARAMS]`: one request from the shell; `latchkey rig webdriver`: W3C WebDriver in front of the browser's driver, its virtual authenticators rig keys (docs/webdriver.md).
public enum RigCommand {
    public static let spec = CommandSpec(
        name: "rig",
        abstract: "Run many keys in one process for test rigs, added and removed through a control socket (`rig call`), "
            + "or behind WebDriver's virtual authenticators (`rig webdriver`).",
        positionals: ["call|webdriver", "METHOD", "PARAMS"], minimumPositionals: 0,
        options: [
            .init("control", value: "PATH", help: "The rig's control socket (default: $XDG_RUNTIME_DIR/latchkey/rig.control, "
                  + "or ~/.cache/latchkey/run-<host>/rig.control)."),
            .init("root", value: "DIR", help: "Where the keys' stores live (DIR/<authenticatorId>); default: a temporary "
                  + "private directory, deleted when the rig stops."),
            .init("timeout", value: "SECONDS", help: "rig call: how long to wait for the answer (default: 60)."),
            .init("port", value: "PORT", help: "rig webdriver: the port on 127.0.0.1 a suite's WebDriver URL names "
                  + "(default: 4444; 0: any free one, printed)."),
            .init("driver", value: "PATH", help: "rig webdriver: the browser's driver to start (default: chromedriver)."),
            .init("driver-url", value: "URL", help: "rig webdriver: a driver already running, http://127.0.0.1:PORT, instead of starting one."),
            .init("driver-log", value: "FILE", help: "rig webdriver: the started driver's verbose log."),
            .init("socket-keys", value: "DIR", help: "rig webdriver: put keys on the socket transport in DIR instead of uhid "
                  + "(no browser finds them: for testing where there is no /dev/uhid)."),
            .logLevel,
        ])

    public static func run(_ parsed: ParsedArguments,
                           environment: [String: String] = ProcessInfo.processInfo.environment) throws(UsageError) -> Int32 {
        let control = parsed.value("control")
        if let control, control.isEmpty { throw UsageError("invalid --control '': give a socket path") }
        let controlPath = control ?? ControlSocket.defaultPath(name: "rig", environment: environment)
        switch parsed.positionals.first {
        case nil:
            guard parsed.positionals.isEmpty else { throw UsageError("`latchkey rig` takes no arguments; did you mean `rig call`?") }
            var configuration = RigConfiguration(controlPath: controlPath, controlPathIsDefault: control == nil,
                                                 root: parsed.value("root"))
            if let root = configuration.root, !root.hasPrefix("/") {
                throw UsageError("invalid --root '\(root)': give an absolute directory path")
            }
            configuration.uhidPath = environment["LATCHKEY_UHID_PATH"] ?? "/dev/uhid"
            if let level = try parsed.logLevel() { configuration.logLevel = level }
            return RigHost.run(configuration)
        case "webdriver":
            guard parsed.positionals.count == 1 else { throw UsageError("`latchkey rig webdriver` takes no arguments") }
            return WebDriverHost.run(try webDriverConfiguration(parsed, environment: environment))
        case "call":
            guard parsed.positionals.count >= 2, parsed.positionals.count <= 3 else {
                throw UsageError("usage: latchkey rig call METHOD ['{\"json\":\"params\"}'] [--control PATH]")
            }
            let params = parsed.positionals.count == 3 ? parsed.positionals[2] : "{}"
            // Re-serialized compactly: the request must be one line, whatever the shell passed.
            guard let object = JSONDocument.parse(Array(params.utf8)), case .object = object else {
                throw UsageError("invalid PARAMS '\(params)': give a JSON object, e.g. '{\"authenticatorId\":\"k1\"}'")
            }
            let compact = Array(JSONValue(object).rendered.utf8)
            var timeout = 60.0
            if let text = parsed.value("timeout") {
                guard let seconds = Double(text), seconds.isFinite, seconds > 0, seconds <= 3_600 else {
                    throw UsageError("invalid --timeout '\(text)': give seconds, up to 3600")
                }
                timeout = seconds
            }
            return call(method: parsed.positionals[1], params: Array(compact), path: controlPath, pathIsDefault: control == nil,
                        timeoutMilliseconds: Int32(timeout * 1_000))
        case let other?:
            throw UsageError("unknown rig command '\(other)': use `latchkey rig`, `latchkey rig call METHOD [PARAMS]` or `latchkey rig webdriver`")
        }
    }

    static func webDriverConfiguration(_ parsed: ParsedArguments, environment: [String: String]) throws(UsageError) -> WebDriverConfiguration {
        for option in ["control", "timeout"] where parsed.value(option) != nil {
            throw UsageError("--\(option) is not an option of `latchkey rig webdriver`")
        }
        var port: UInt16 = 4444
        if let text = parsed.value("port") {
            guard let number = UInt16(text) else { throw UsageError("invalid --port '\(text)': give a port from 0 to 65535") }
            port = number
        }
        let driver: WebDriverConfiguration.Driver
        switch (parsed.value("driver"), parsed.value("driver-url")) {
        case (_?, _?):
            throw UsageError("give --driver or --driver-url, not both")
        case (nil, let url?):
            guard parsed.value("driver-log") == nil else { throw UsageError("--driver-log is for a driver this command starts") }
            guard let driverPort = Self.loopbackPort(url) else {
                throw UsageError("invalid --driver-url '\(url)': give http://127.0.0.1:PORT (the driver must listen on this machine's loopback)")
            }
            driver = .running(port: driverPort)
        case (let path, nil):
            if let path, path.isEmpty { throw UsageError("invalid --driver '': give the driver's path or name") }
            if let log = parsed.value("driver-log"), !log.hasPrefix("/") {
                throw UsageError("invalid --driver-log '\(log)': give an absolute file path")
            }
            driver = .start(executable: path ?? "chromedriver", log: parsed.value("driver-log"))
        }
        var configuration = WebDriverConfiguration(port: port, driver: driver, root: parsed.value("root"))
        if let root = configuration.root, !root.hasPrefix("/") {
            throw UsageError("invalid --root '\(root)': give an absolute directory path")
        }
        if let directory = parsed.value("socket-keys") {
            guard directory.hasPrefix("/") else { throw UsageError("invalid --socket-keys '\(directory)': give an absolute directory path") }
            configuration.socketKeys = directory
        }
        configuration.uhidPath = environment["LATCHKEY_UHID_PATH"] ?? "/dev/uhid"
        if let level = try parsed.logLevel() { configuration.logLevel = level }
        return configuration
    }

    /// The port of `http://127.0.0.1:PORT` or `http://localhost:PORT` (a trailing slash allowed).
    static func loopbackPort(_ url: String) -> UInt16? {
        var rest = Substring(url)
        guard rest.hasPrefix("http://") else { return nil }
        rest = rest.dropFirst("http://".count)
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        let parts = rest.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0] == "127.0.0.1" || parts[0] == "localhost", let port = UInt16(parts[1]), port > 0 else { return nil }
        return port
    }

    /// Prints the result (pretty JSON) and exits 0, or the error's code and message and exits 1.
    static func call(method: String, params: [UInt8], path: String, pathIsDefault: Bool, timeoutMilliseconds: Int32) -> Int32 {
        let line: [UInt8]
        do {
            line = try RigClient.call(method: method, paramsJSON: params, path: path, pathIsDefault: pathIsDefault,
                                  replyTimeoutMilliseconds: timeoutMilliseconds)
        } catch {
            Console.error(error.description)
            return 1
        }
        guard let response = JSONDocument.parse(line), case .object = response else {
            Console.error("the rig on \(path) sent something that is not a response")
            return 1
        }
        if case .object(let error)? = response["error"] {
            let code = error["code"]?.stringValue ?? "error"
            Console.err("Error (\(code)): \(error["message"]?.stringValue ?? "")")
            return 1
        }
        guard let result = response["result"], Self.isContainer(result) else {
            Console.error("the rig on \(path) answered without a result: \(String(decoding: line, as: UTF8.self))")
            return 1
        }
        // One compact line, as every command's --json (keys sorted: the rig's object has no order of its own).
        Console.json(JSONValue(result).rendered)
        return 0
    }

    /// An object or an array: what a rig answer's result is (a JSON text a line of its own can hold).
    private static func isContainer(_ value: JSONDocument) -> Bool {
        switch value {
        case .object, .array: true
        default: false
        }
    }
}
