import SystemIO
import Synchronization

/// What `latchkey proxy` and `replay --as-device` share: a poll loop that SIGINT and SIGTERM
/// stop, waking it through an event descriptor, and waits timed by a transport's paced sends.
final class StoppableLoop: Sendable {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    let wakeup: WakeupEvent
    private let stopRequested = Atomic<Bool>(false)
    private let logger: Logger

    init(logger: Logger) throws(Failure) {
        self.logger = logger
        do {
            wakeup = try WakeupEvent()
        } catch {
            throw Failure(description: "cannot create a wakeup event: \(error)")
        }
    }

    func requestStop() {
        stopRequested.store(true, ordering: .releasing)
        wakeup.signal()
    }

    var isStopped: Bool { stopRequested.load(ordering: .acquiring) }

    /// `body`, stopped by SIGINT or SIGTERM (SIGHUP is ignored).
    func untilSignalled(_ body: () -> Int32) -> Int32 {
        let signals = SignalWatcher(stop: { [self] signal in
            logger.info("\(signal), stopping")
            requestStop()
        }, powerCycle: {})
        defer { signals.cancel() }
        return body()
    }

    /// poll(2) on `descriptors` and the wakeup event, until one is ready or `pendingSendDeadline`
    /// (monotonic ns) is due. The wakeup is drained here. nil: poll failed (logged).
    func wait(for descriptors: [Int32], pendingSendDeadline: UInt64?) -> [Int32]? {
        var timeout: Int32 = -1
        if let deadline = pendingSendDeadline {
            let now = MonotonicClock.nanoseconds()
            timeout = deadline <= now ? 0 : Int32(clamping: (deadline - now) / 1_000_000 + 1)
        }
        while true {
            do {
                let ready = try Poller.wait(for: descriptors + [wakeup.descriptor], timeoutMilliseconds: timeout)
                if ready.contains(wakeup.descriptor) { wakeup.drain() }
                return ready
            } catch {
                if error == .interrupted { continue }
                logger.error("poll: \(error)")
                return nil
            }
        }
    }
}
