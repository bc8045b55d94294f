import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
import Encoding
#endif

/// A site's passkey endpoints (W3C "A Well-Known URL for Passkey Endpoints", Working Draft
/// 2026-01-14): `https://<rpId>/.well-known/passkey-endpoints`, a JSON object whose members
/// `enroll`, `manage` and `prfUsageDetails` are optional URLs (`{}` is a valid answer).
public struct PasskeyEndpoints: Sendable, Equatable {
    public var enroll: String?
    public var manage: String?
    /// Where the site says what it encrypts with a passkey's PRF: deleting such a passkey can
    /// lock the user out of that data.
    public var prfUsageDetails: String?

    public init(enroll: String? = nil, manage: String? = nil, prfUsageDetails: String? = nil) {
        self.enroll = enroll; self.manage = manage; self.prfUsageDetails = prfUsageDetails
    }

    /// Reads the document. A member that is not a string, or not an https URL, is left out (a
    /// credential manager must never send its user to an http page it got from the network).
    public init(json: [UInt8]) throws(ExchangeError) {
        guard let object = JSONDocument.parse(json)?.objectValue else {
            throw .malformed("the passkey-endpoints document is not a JSON object")
        }
        func url(_ member: String) -> String? {
            guard let text = object[member]?.stringValue, let url = URL(string: text), url.scheme?.lowercased() == "https",
                  url.host != nil else { return nil }
            return text
        }
        self.init(enroll: url("enroll"), manage: url("manage"), prfUsageDetails: url("prfUsageDetails"))
    }

    public var isEmpty: Bool { enroll == nil && manage == nil && prfUsageDetails == nil }
}

/// Fetches passkey endpoints: opt-in network use, HTTPS only (a redirect must stay on HTTPS),
/// a short timeout, a size cap, and a cache (a day for an answer, an hour for a failure) so that
/// listing credentials does not ask a site each time.
public final class PasskeyEndpointsClient: @unchecked Sendable {
    public static let maximumBytes = 16 * 1024
    public static let timeoutSeconds: TimeInterval = 5
    static let answerLifetime: TimeInterval = 24 * 3600
    static let failureLifetime: TimeInterval = 3600

    public enum Outcome: Sendable, Equatable {
        case found(PasskeyEndpoints)
        case failed(String)
    }

    let cachePath: String?
    private var cache: [String: (at: TimeInterval, outcome: Outcome)] = [:]

    /// `cachePath`: a JSON file (nil: no cache), normally `$XDG_CACHE_HOME/latchkey/passkey-endpoints.json`.
    public init(cachePath: String?) {
        self.cachePath = cachePath
        loadCache()
    }

    public static func defaultCachePath(environment: [String: String]) -> String? {
        if let cache = environment["XDG_CACHE_HOME"], cache.hasPrefix("/") { return cache + "/latchkey/passkey-endpoints.json" }
        guard let home = environment["HOME"], home.hasPrefix("/") else { return nil }
        return home + "/.cache/latchkey/passkey-endpoints.json"
    }

    /// The endpoints of `rpID` (cached, or fetched now).
    public func endpoints(rpID: String, now: TimeInterval = Date().timeIntervalSince1970) -> Outcome {
        if let cached = cachedEndpoints(rpID: rpID, now: now) { return cached }
        let outcome = fetch(rpID: rpID)
        cache[rpID] = (now, outcome)
        saveCache()
        return outcome
    }

    /// What the cache holds for `rpID` within its lifetime, without asking the site (nil: nothing).
    public func cachedEndpoints(rpID: String, now: TimeInterval = Date().timeIntervalSince1970) -> Outcome? {
        guard let cached = cache[rpID] else { return nil }
        let lifetime = if case .found = cached.outcome { Self.answerLifetime } else { Self.failureLifetime }
        return now - cached.at < lifetime && now >= cached.at ? cached.outcome : nil
    }

    func fetch(rpID: String) -> Outcome {
        let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789.-")
        guard !rpID.isEmpty, rpID.count <= 253, rpID.allSatisfy({ allowed.contains($0) }),
              let url = URL(string: "https://\(rpID)/.well-known/passkey-endpoints") else {
            return .failed("\(rpID) is not a domain to ask")
        }
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: Self.timeoutSeconds)
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        let fetcher = Fetcher()
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = Self.timeoutSeconds
        configuration.timeoutIntervalForResource = Self.timeoutSeconds
        configuration.httpCookieStorage = nil
        configuration.urlCache = nil
        let session = URLSession(configuration: configuration, delegate: fetcher, delegateQueue: nil)
        defer { session.invalidateAndCancel() }
        session.dataTask(with: request).resume()
        guard fetcher.done.wait(timeout: .now() + Self.timeoutSeconds + 1) == .success else {
            return .failed("https://\(rpID) did not answer within \(Int(Self.timeoutSeconds)) s")
        }
        return fetcher.result.withLock { $0 } ?? .failed("no answer")
    }

    /// URLSession's delegate: stops at the size cap, refuses redirects off HTTPS, keeps the answer.
    private final class Fetcher: NSObject, URLSessionDataDelegate, @unchecked Sendable {
        let done = DispatchSemaphore(value: 0)
        let result = NSLockedValue<Outcome?>(nil)
        private var body: [UInt8] = []
        private var status = 0
        private var tooLarge = false
        private var refusedRedirect: String?

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
            status = (response as? HTTPURLResponse)?.statusCode ?? 0
            if response.expectedContentLength > Int64(PasskeyEndpointsClient.maximumBytes) {
                tooLarge = true
                completionHandler(.cancel)
                return
            }
            completionHandler(.allow)
        }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
            body += data
            if body.count > PasskeyEndpointsClient.maximumBytes {
                tooLarge = true
                dataTask.cancel()
            }
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                        newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void) {
            guard request.url?.scheme?.lowercased() == "https" else {
                refusedRedirect = request.url?.absoluteString ?? "?"
                completionHandler(nil)
                task.cancel()
                return
            }
            completionHandler(request)
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
            let outcome: Outcome
            if let refusedRedirect {
                outcome = .failed("it redirects off HTTPS (to \(refusedRedirect.prefix(100))); not followed")
            } else if tooLarge {
                outcome = .failed("its answer is over \(PasskeyEndpointsClient.maximumBytes / 1024) KiB")
            } else if let error {
                outcome = .failed(Self.describe(error as NSError))
            } else if status != 200 {
                outcome = .failed("HTTP status \(status)")
            } else {
                do {
                    outcome = .found(try PasskeyEndpoints(json: body))
                } catch {
                    outcome = .failed(error.description)
                }
            }
            result.withLock { $0 = outcome }
            done.signal()
        }

        /// What went wrong, in words (URLSession's errors on Linux carry curl's text underneath).
        static func describe(_ error: NSError) -> String {
            let underlying = (error.userInfo[NSUnderlyingErrorKey] as? NSError)?.userInfo[NSLocalizedDescriptionKey] as? String
            let detail = underlying ?? error.userInfo[NSLocalizedDescriptionKey] as? String
            switch error.code {
            case NSURLErrorTimedOut: return "no answer within \(Int(PasskeyEndpointsClient.timeoutSeconds)) s"
            case NSURLErrorCannotFindHost: return "the name does not resolve"
            case NSURLErrorCannotConnectToHost: return "nothing listens on its HTTPS port"
            default: return "the request failed" + (detail.map { ": \($0)" } ?? " (URL error \(error.code))")
            }
        }
    }

    // MARK: The cache file: {"rpId": {"at": seconds, "enroll": …, "manage": …, "prfUsageDetails": …} or {"at", "error"}}

    private func loadCache() {
        guard let cachePath, let data = FileManager.default.contents(atPath: cachePath),
              let object = JSONDocument.parse(Array(data))?.objectValue else { return }
        for (rpID, value) in object {
            guard case .number(let at)? = value["at"] else { continue }
            if let error = value["error"]?.stringValue {
                cache[rpID] = (at, .failed(error))
            } else {
                cache[rpID] = (at, .found(PasskeyEndpoints(enroll: value["enroll"]?.stringValue, manage: value["manage"]?.stringValue,
                                                           prfUsageDetails: value["prfUsageDetails"]?.stringValue)))
            }
        }
    }

    private func saveCache() {
        guard let cachePath else { return }
        var object: [String: JSONValue] = [:]
        for (rpID, entry) in cache {
            var value: [String: JSONValue] = ["at": .double(entry.at)]
            switch entry.outcome {
            case let .failed(error): value["error"] = .string(error)
            case let .found(endpoints):
                for (name, url) in [("enroll", endpoints.enroll), ("manage", endpoints.manage),
                                    ("prfUsageDetails", endpoints.prfUsageDetails)] {
                    if let url { value[name] = .string(url) }
                }
            }
            object[rpID] = .sorted(value)
        }
        let data = Data(JSONValue.sorted(object).rendered.utf8)
        let directory = (cachePath as NSString).deletingLastPathComponent
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                 attributes: [.posixPermissions: 0o700])
        let temporary = cachePath + ".tmp-\(getpid())"
        guard FileManager.default.createFile(atPath: temporary, contents: data, attributes: [.posixPermissions: 0o600]) else { return }
        if rename(temporary, cachePath) != 0 { unlink(temporary) }
    }
}

/// A value behind a lock (the delegate's answer crosses from URLSession's queue to the caller).
final class NSLockedValue<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<R>(_ body: (inout Value) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}
