import Dispatch
import Glibc

/// SIGINT/SIGTERM stop the key, SIGHUP power-cycles it. Dispatch signal sources run the
/// handlers on a queue, outside signal context.
public final class SignalWatcher: @unchecked Sendable {
    private var sources: [DispatchSourceSignal] = []
    private let queue = DispatchQueue(label: "latchkey.signals")

    public init(stop: @escaping @Sendable (String) -> Void, powerCycle: @escaping @Sendable () -> Void) {
        for (number, name) in [(SIGINT, "SIGINT"), (SIGTERM, "SIGTERM")] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { stop(name) }
            source.resume()
            sources.append(source)
        }
        signal(SIGHUP, SIG_IGN)
        let hup = DispatchSource.makeSignalSource(signal: SIGHUP, queue: queue)
        hup.setEventHandler { powerCycle() }
        hup.resume()
        sources.append(hup)
        signal(SIGPIPE, SIG_IGN)
    }

    public func cancel() {
        for source in sources { source.cancel() }
        sources = []
    }
}
