import Foundation
import SystemIO
import KeyService
import Presence

/// What `latchkey rig` runs: where its control socket and stores are.
public struct RigConfiguration: Equatable, Sendable {
    /// `--control PATH`, or the default `…/latchkey/rig.control`.
    public var controlPath: String
    /// Whether `controlPath` is the default one, whose directory the rig creates private.
    public var controlPathIsDefault: Bool
    /// `--root DIR`: the keys' stores, kept; nil: a temporary private directory, deleted at exit.
    public var root: String?
    /// The uhid node `usb` keys open (`LATCHKEY_UHID_PATH`, default /dev/uhid).
    public var uhidPath = "/dev/uhid"
    public var logLevel: Logger.Level = .info

    public init(controlPath: String, controlPathIsDefault: Bool, root: String? = nil) {
        self.controlPath = controlPath
        self.controlPathIsDefault = controlPathIsDefault
        self.root = root
    }
}

/// Runs a `Rig` and its control socket until SIGINT/SIGTERM; SIGHUP power-cycles every key.
public enum RigHost {
    /// Control connections at once: a test suite, its event streams, and `rig call`s.
    static let maximumConnections = 64

    public static func run(_ configuration: RigConfiguration) -> Int32 {
        let logger = Logger(level: configuration.logLevel)
        let root: String
        let temporary = configuration.root == nil
        do {
            root = try prepareRoot(configuration.root)
            if configuration.controlPathIsDefault {
                try ControlSocket.preparePrivateDirectory((configuration.controlPath as NSString).deletingLastPathComponent)
            }
        } catch {
            logger.error(error.description)
            return 1
        }
        defer {
            if temporary { try? FileManager.default.removeItem(atPath: root) }
        }
        let rig = Rig(root: root, uhidPath: configuration.uhidPath, logger: logger)
        let socket: ControlSocket
        do {
            socket = try ControlSocket(path: configuration.controlPath, logger: logger, maximumConnections: maximumConnections,
                                       refusal: RigProtocol.response(id: nil, failure: RigFailure(.tooMany,
                                           "the rig already serves \(maximumConnections) control connections; close one")),
                                       foreignRefusal: { RigProtocol.response(id: nil, failure: RigFailure(.forbidden, $0)) },
                                       onStop: { rig.closeConnections() }, serve: { RigConnection.serve($0, rig: rig) })
        } catch {
            logger.error(error.description)
            return 1
        }
        let done = DispatchSemaphore(value: 0)
        let signals = SignalWatcher(stop: { name in
            logger.info("\(name), shutting down")
            done.signal()
        }, powerCycle: {
            rig.powerCycleAll()
        })
        socket.start()
        logger.info("rig: control socket \(configuration.controlPath); stores in \(root)\(temporary ? " (deleted at exit)" : "")")
        done.wait()
        signals.cancel()
        socket.stop()
        rig.stop()
        logger.info("rig stopped")
        return 0
    }

    /// `--root DIR` created private (or checked private), or a fresh private temporary directory.
    public static func prepareRoot(_ explicit: String?) throws(ControlSocket.Failure) -> String {
        if let explicit {
            do {
                try FileSystem.createDirectories(explicit, mode: 0o700)
            } catch {
                throw .init("cannot create the rig's --root \(explicit): \(error)")
            }
            guard let status = try? FileSystem.linkStatus(explicit), FileSystem.isPrivateDirectory(status) else {
                throw .init("--root \(explicit) must be a directory owned by you with mode 0700 (it holds the keys' stores)")
            }
            return explicit
        }
        let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "/tmp"
        var template = Array((base + "/latchkey-rig-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        guard made != nil else { throw .init("cannot create a temporary directory in \(base): \(Errno.current)") }
        return String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

extension Rig {
    /// SIGHUP: every key's power cycle.
    func powerCycleAll() {
        for key in runningKeys() { key.powerCycle() }
    }
}
