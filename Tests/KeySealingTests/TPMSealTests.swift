import FIDOCrypto
@testable import KeySealing
import TestScratch
import Foundation
import Glibc
import XCTest

/// Sealing to a TPM 2.0 (TPMSeal), against real software TPMs (swtpm), each test its own: what is
/// sealed comes back, only from the TPM that sealed it, only while its PCRs hold, and every way
/// of failing says what happened and what to do.
final class TPMSealTests: SoftwareTPMTestCase {
    private func message(_ body: () throws -> Void, file: StaticString = #filePath, line: UInt = #line) -> SealError? {
        do {
            try body()
            XCTFail("no error", file: file, line: line)
            return nil
        } catch let error as SealError {
            return error
        } catch {
            XCTFail("not a SealError: \(error)", file: file, line: line)
            return nil
        }
    }

    func testSealedSecretUnsealsOnTheSameTPM() throws {
        let tpm = try startTPM()
        let secret = SecretBytes(randomCount: 32)
        let blob = try TPMSeal.seal(secret, pcrs: [], tcti: tpm.tcti)
        XCTAssertEqual(blob.pcrs, [])
        // A second unseal works too: nothing of the first was left behind or used up.
        for _ in 0..<2 {
            XCTAssertEqual(try TPMSeal.unseal(blob, tcti: tpm.tcti).copyBytes(), secret.copyBytes())
        }
        XCTAssertEqual(try tpm.transientHandles(), 0, "the storage key and the sealed object are flushed")
    }

    func testBlobHoldsNoCopyOfTheSecret() throws {
        let tpm = try startTPM()
        let secret = SecretBytes(randomCount: 32)
        for pcrs: [UInt8] in [[], [7]] {
            let blob = try TPMSeal.seal(secret, pcrs: pcrs, tcti: tpm.tcti)
            let plain = secret.copyBytes()
            // Not the secret, nor any 8 bytes of it.
            for start in 0...(plain.count - 8) {
                let window = Array(plain[start..<start + 8])
                XCTAssertFalse(contains(blob.publicArea, window), "public area holds secret bytes \(start)..<\(start + 8)")
                XCTAssertFalse(contains(blob.privateArea, window), "private area holds secret bytes \(start)..<\(start + 8)")
            }
        }
    }

    /// The secret crosses the bus between the CPU and the TPM only encrypted (TPM 2.0 Part 1, 21:
    /// parameter encryption in a session salted by the storage key), so a sniffer on a discrete
    /// TPM's SPI/LPC bus learns nothing: what the TSS and swtpm exchange, recorded by a relay
    /// between them, holds no 8 bytes of it while sealing and unsealing, with and without PCRs.
    func testSecretCrossesTheWireOnlyEncrypted() throws {
        let tpm = try startTPM()
        let tap = try TPMWiretap(target: tpm.port)
        defer { tap.stop() }
        let secret = SecretBytes(randomCount: 32)
        for pcrs: [UInt8] in [[], [7]] {
            let blob = try TPMSeal.seal(secret, pcrs: pcrs, tcti: tap.tcti)
            XCTAssertEqual(try TPMSeal.unseal(blob, tcti: tap.tcti).copyBytes(), secret.copyBytes())
        }
        let wire = tap.recorded
        XCTAssertGreaterThan(wire.count, 2_000, "the relay saw the commands and responses")
        let plain = secret.copyBytes()
        let leaked = (0...(plain.count - 8)).filter { contains(wire, Array(plain[$0..<$0 + 8])) }
        XCTAssertEqual(leaked, [], "the secret's bytes from these offsets (8 each) crossed the wire in the clear")
        XCTAssertEqual(try tpm.loadedSessions(), 0, "the salted sessions are flushed")
        XCTAssertEqual(try tpm.transientHandles(), 0, "the storage key and the sealed object are flushed")
    }

    /// The blob names the storage key it was sealed under, and unsealing checks the one it
    /// re-creates before the salted session starts: a TPM answering with another key (another
    /// machine's, or an interposer's own, to read the secret) is refused by name. A blob from
    /// before the name was recorded still opens.
    func testUnsealChecksTheStorageKeyItWasSealedUnder() throws {
        let tpm = try startTPM()
        let secret = SecretBytes(randomCount: 32)
        let blob = try TPMSeal.seal(secret, pcrs: [], tcti: tpm.tcti)
        let name = try XCTUnwrap(blob.storageKeyName)
        XCTAssertEqual(name.count, 34, "nameAlg SHA-256 (2 bytes) and the digest of the key's public area")
        XCTAssertEqual(Array(name.prefix(2)), [0x00, 0x0B])
        XCTAssertEqual(try TPMSeal.seal(secret, pcrs: [7], tcti: tpm.tcti).storageKeyName, name,
                       "the same owner seed gives the same storage key every time")

        var pinnedElsewhere = blob
        pinnedElsewhere.storageKeyName![33] ^= 0x01
        guard case let .sealed(text) = message({ _ = try TPMSeal.unseal(pinnedElsewhere, tcti: tpm.tcti) }) else {
            return XCTFail("not .sealed")
        }
        XCTAssertTrue(text.contains("sealed to another TPM"), text)
        XCTAssertTrue(text.contains("storage key is not the one it was sealed under"), text)
        XCTAssertTrue(text.contains("answering in its place"), text)
        XCTAssertEqual(try tpm.transientHandles(), 0, "the storage key is flushed after the refusal")
        XCTAssertEqual(try tpm.loadedSessions(), 0, "no session was started")

        // Issue 34: a blob without the name no longer opens (deleting the member stripped the
        // defence); only re-sealing reads it, to upgrade it.
        var unpinned = blob
        unpinned.storageKeyName = nil
        guard case let .sealed(refusal) = message({ _ = try TPMSeal.unseal(unpinned, tcti: tpm.tcti) }) else {
            return XCTFail("an unpinned blob opened")
        }
        XCTAssertTrue(refusal.contains("latchkey store seal --tpm"), refusal)
        XCTAssertEqual(try TPMSeal.unseal(unpinned, tcti: tpm.tcti, allowUnpinned: true).copyBytes(), secret.copyBytes())
    }

    /// The finding of issue 34, end to end on a master.key: with `tpmStorageKey` deleted from the
    /// record the store no longer opens (before, it opened silently); `store seal --tpm`'s path
    /// upgrades it, after which it opens and names the key again.
    func testStrippedStorageKeyNameIsRefusedAndResealingUpgrades() throws {
        let tpm = try startTPM()
        let saved = getenv("TSS2_TCTI").map { String(cString: $0) }
        defer { if let saved { setenv("TSS2_TCTI", saved, 1) } else { unsetenv("TSS2_TCTI") } }
        setenv("TSS2_TCTI", tpm.tcti, 1)
        let directory = NSTemporaryDirectory() + "stripped-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        XCTAssertEqual(mkdir(directory, 0o700), 0)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = MasterKeyFile(directory: directory)
        let key = SecretBytes(randomCount: 32)
        XCTAssertTrue(FileManager.default.createFile(atPath: file.path, contents: Data(key.copyBytes()),
                                                     attributes: [.posixPermissions: 0o600]))
        try MasterKeySeal.seal(file, with: .tpm(pcrs: []))
        XCTAssertEqual(try MasterKeySeal.state(file), .sealedWithTPM(pcrs: [], pinned: true))
        XCTAssertEqual(try MasterKeySeal.load(file)?.copyBytes(), key.copyBytes())

        // Delete the member, as someone who can edit the file would.
        var record = try MasterKeySeal.Sealed(decoding: XCTUnwrap(try file.read()), path: file.path)
        guard case var .tpm(blob) = record.wrapping else { return XCTFail("not a TPM record") }
        blob.storageKeyName = nil
        record.wrapping = .tpm(blob)
        XCTAssertTrue(FileManager.default.createFile(atPath: file.path, contents: Data(record.encoded()),
                                                     attributes: [.posixPermissions: 0o600]))
        XCTAssertEqual(try MasterKeySeal.state(file), .sealedWithTPM(pcrs: [], pinned: false))
        XCTAssertNotNil(MasterKeySeal.State.sealedWithTPM(pcrs: [], pinned: false).weakness)
        XCTAssertThrowsError(try MasterKeySeal.load(file)) {
            guard case let .sealed(text)? = $0 as? SealError else { return XCTFail("\($0)") }
            XCTAssertTrue(text.contains(file.path) && text.contains("latchkey store seal --tpm"), text)
        }

        try MasterKeySeal.seal(file, with: .tpm(pcrs: []))
        XCTAssertEqual(try MasterKeySeal.state(file), .sealedWithTPM(pcrs: [], pinned: true))
        XCTAssertEqual(try MasterKeySeal.load(file)?.copyBytes(), key.copyBytes())
    }

    func testAnotherTPMCannotUnseal() throws {
        let first = try startTPM(), second = try startTPM()
        let blob = try TPMSeal.seal(SecretBytes(randomCount: 32), pcrs: [], tcti: first.tcti)
        guard case let .sealed(text) = message({ _ = try TPMSeal.unseal(blob, tcti: second.tcti) }) else {
            return XCTFail("not .sealed")
        }
        XCTAssertTrue(text.contains("sealed to another TPM"), text)
        XCTAssertTrue(text.contains("open the store on the machine that sealed it"), text)
        XCTAssertEqual(try second.transientHandles(), 0, "the storage key is flushed after a failed load")
    }

    func testPCRBoundSecretLocksWhenThePCRChanges() throws {
        let tpm = try startTPM()
        let secret = SecretBytes(randomCount: 32)
        let blob = try TPMSeal.seal(secret, pcrs: [7, 7], tcti: tpm.tcti)
        XCTAssertEqual(blob.pcrs, [7], "PCRs are kept sorted and unique")
        XCTAssertEqual(try TPMSeal.unseal(blob, tcti: tpm.tcti).copyBytes(), secret.copyBytes())

        // Another PCR changing does not matter; PCR 7 changing (a Secure Boot change) does.
        try TPMSeal.extendPCR(8, digest: SHA256.hash(Array("grub".utf8)), tcti: tpm.tcti)
        XCTAssertEqual(try TPMSeal.unseal(blob, tcti: tpm.tcti).copyBytes(), secret.copyBytes())
        try TPMSeal.extendPCR(7, digest: SHA256.hash(Array("db update".utf8)), tcti: tpm.tcti)
        guard case let .sealed(text) = message({ _ = try TPMSeal.unseal(blob, tcti: tpm.tcti) }) else {
            return XCTFail("not .sealed")
        }
        XCTAssertTrue(text.contains("bound to PCR 7, whose value has changed since"), text)
        XCTAssertTrue(text.contains("restore a backup"), text)
        XCTAssertEqual(try tpm.transientHandles(), 0, "the storage key and the sealed object are flushed")
        XCTAssertEqual(try tpm.loadedSessions(), 0, "the policy session is flushed")

        // Sealed again now, it opens under the new value.
        let resealed = try TPMSeal.seal(secret, pcrs: [7], tcti: tpm.tcti)
        XCTAssertEqual(try TPMSeal.unseal(resealed, tcti: tpm.tcti).copyBytes(), secret.copyBytes())
    }

    func testPCRBoundSecretDoesNotOpenWithThePassword() throws {
        let tpm = try startTPM()
        let open = try TPMSeal.seal(SecretBytes(randomCount: 32), pcrs: [], tcti: tpm.tcti)
        let bound = try TPMSeal.seal(SecretBytes(randomCount: 32), pcrs: [7], tcti: tpm.tcti)
        // A PCR-bound blob whose PCR list is dropped is tried with the password: refused.
        var stripped = bound
        stripped.pcrs = []
        guard case .sealed = message({ _ = try TPMSeal.unseal(stripped, tcti: tpm.tcti) }) else { return XCTFail("not .sealed") }
        XCTAssertNotEqual(open.publicArea.count, bound.publicArea.count, "only the bound one carries a 32-byte authPolicy")
    }

    func testUnreachableTPMSaysNoTPMAnsweredAndWhatToCheck() throws {
        // A real blob, so that unseal gets as far as the TPM.
        let tpm = try startTPM()
        let blob = try TPMSeal.seal(SecretBytes(randomCount: 32), pcrs: [], tcti: tpm.tcti)
        let tcti = "swtpm:host=127.0.0.1,port=\(try SoftwareTPM.closedPort())"
        guard case let .sealed(text) = message({ _ = try TPMSeal.unseal(blob, tcti: tcti) }) else { return XCTFail("not .sealed") }
        XCTAssertTrue(text.contains("the master key is sealed to a TPM 2.0, and no TPM answered (TCTI \(tcti): "), text)
        XCTAssertTrue(text.contains("is this the machine it was sealed on"), text)
        XCTAssertTrue(text.contains("/dev/tpmrm0 (group tss)"), text)

        guard case let .io(sealText) = message({ _ = try TPMSeal.seal(SecretBytes(randomCount: 32), pcrs: [], tcti: tcti) }) else {
            return XCTFail("not .io")
        }
        XCTAssertTrue(sealText.contains("no TPM answered (TCTI \(tcti): "), sealText)
    }

    func testProbe() throws {
        let tpm = try startTPM()
        XCTAssertNil(TPMSeal.probe(tcti: tpm.tcti))
        let closed = "swtpm:host=127.0.0.1,port=\(try SoftwareTPM.closedPort())"
        let reason = try XCTUnwrap(TPMSeal.probe(tcti: closed))
        XCTAssertTrue(reason.contains("no TPM answered (TCTI \(closed): "), reason)
    }

    func testNilTCTIReadsTSS2TCTI() throws {
        let tpm = try startTPM()
        let saved = getenv("TSS2_TCTI").map { String(cString: $0) }
        defer { if let saved { setenv("TSS2_TCTI", saved, 1) } else { unsetenv("TSS2_TCTI") } }
        setenv("TSS2_TCTI", tpm.tcti, 1)
        XCTAssertNil(TPMSeal.probe(tcti: nil))
        let secret = SecretBytes(randomCount: 32)
        let blob = try TPMSeal.seal(secret, pcrs: [], tcti: nil)
        XCTAssertEqual(try TPMSeal.unseal(blob, tcti: tpm.tcti).copyBytes(), secret.copyBytes())
        // Unset: the kernel's resource manager, never a simulator on localhost:2321 (the loader's fallback).
        unsetenv("TSS2_TCTI")
        XCTAssertEqual(TPMSeal.configuration(nil), "device:/dev/tpmrm0")
    }

    func testMalformedBlobsAreCorrupt() throws {
        let tpm = try startTPM()
        let blob = try TPMSeal.seal(SecretBytes(randomCount: 32), pcrs: [], tcti: tpm.tcti)
        var truncated = blob
        truncated.publicArea.removeLast()
        var trailing = blob
        trailing.privateArea.append(0)
        var pastPCRs = blob
        pastPCRs.pcrs = [24]
        var unsorted = blob
        unsorted.pcrs = [7, 0]
        for bad in [truncated, trailing, pastPCRs, unsorted] {
            guard case .corrupt = message({ _ = try TPMSeal.unseal(bad, tcti: tpm.tcti) }) else { return XCTFail("not .corrupt") }
        }
        guard case .io = message({ _ = try TPMSeal.seal(SecretBytes(randomCount: 32), pcrs: [24], tcti: tpm.tcti) }) else {
            return XCTFail("PCR 24 accepted")
        }
        guard case .io = message({ _ = try TPMSeal.seal(SecretBytes(randomCount: 129), pcrs: [], tcti: tpm.tcti) }) else {
            return XCTFail("129 bytes accepted")
        }
    }

    func testResponseCodesLoseTheirHandleParameterAndSessionNumbers() {
        // TPM 2.0 Part 2, 6.6.3: format one carries the number in bits 6-11.
        XCTAssertEqual(TPMFailure(.unseal, 0x99D).tpmCode, TPMSeal.ResponseCode.policyFail)   // session 1
        XCTAssertEqual(TPMFailure(.load, 0x1DF).tpmCode, TPMSeal.ResponseCode.integrity)      // parameter 1
        XCTAssertEqual(TPMFailure(.unseal, 0x128).tpmCode, TPMSeal.ResponseCode.pcrChanged)   // format zero
        XCTAssertEqual(TPMFailure(.load, 0x0C_019F).tpmCode, TPMSeal.ResponseCode.integrity)  // via a resource manager
        XCTAssertNil(TPMFailure(.load, 0x0A_000A).tpmCode)                                    // TCTI I/O error
        XCTAssertTrue(TPMFailure(.load, 0x0A_000A).isUnreachable)
    }

    private func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains { Array(haystack[$0..<$0 + needle.count]) == needle }
    }
}

/// A test case that starts software TPMs of its own and stops them after each test.
class SoftwareTPMTestCase: XCTestCase {
    private var started: [SoftwareTPM] = []

    override func tearDown() {
        for tpm in started { tpm.stop() }
        started.removeAll()
        super.tearDown()
    }

    /// A fresh swtpm: fails the test (never skips it: a skipped test must not pass) when swtpm is
    /// not installed.
    func startTPM(file: StaticString = #filePath, line: UInt = #line) throws -> SoftwareTPM {
        guard let executable = SoftwareTPM.executable() else {
            XCTFail("swtpm is not installed: install Debian's swtpm and swtpm-tools (apt-get install swtpm swtpm-tools)",
                    file: file, line: line)
            throw SoftwareTPM.Failure.notInstalled
        }
        let tpm = try SoftwareTPM(executable: executable)
        started.append(tpm)
        return tpm
    }
}

/// One swtpm in socket mode (`swtpm socket --tpm2 ... --flags not-need-init,startup-clear`): its
/// state in a fresh directory, so two of them are two different TPMs, on a free loopback port pair.
final class SoftwareTPM {
    enum Failure: Error { case notInstalled, noFreePorts, didNotStart(String), tpm2Tools(String) }

    let port: UInt16
    private let process: Process
    private let state: ShortTempDirectory

    var tcti: String { "swtpm:host=127.0.0.1,port=\(port)" }

    static func executable() -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return (path.split(separator: ":") + ["/usr/bin"]).map { "\($0)/swtpm" }.first { access($0, X_OK) == 0 }
    }

    init(executable: String) throws {
        state = try ShortTempDirectory()
        port = try Self.freePortPair()
        process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["socket", "--tpm2", "--tpmstate", "dir=\(state.path)",
                             "--server", "type=tcp,bindaddr=127.0.0.1,port=\(port)",
                             "--ctrl", "type=tcp,bindaddr=127.0.0.1,port=\(port + 1)",
                             "--flags", "not-need-init,startup-clear"]
        let log = Pipe()
        process.standardOutput = log
        process.standardError = log
        try process.run()
        let deadline = Date().addingTimeInterval(10)
        while !Self.accepts(port) {
            guard process.isRunning, Date() < deadline else {
                stop()
                let output = String(decoding: log.fileHandleForReading.availableData, as: UTF8.self)
                throw Failure.didNotStart("swtpm on port \(port): \(output)")
            }
            usleep(20_000)
        }
    }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }

    /// Transient objects in the TPM, counted by tpm2_getcap (Debian tpm2-tools): swtpm has no
    /// resource manager, so whatever TPMSeal failed to flush is still there to count.
    func transientHandles() throws -> Int { try count("handles-transient") }

    func loadedSessions() throws -> Int { try count("handles-loaded-session") }

    private func count(_ capability: String) throws -> Int {
        let getcap = Process()
        getcap.executableURL = URL(fileURLWithPath: "/usr/bin/tpm2_getcap")
        getcap.arguments = ["-T", tcti, capability]
        let output = Pipe()
        getcap.standardOutput = output
        getcap.standardError = FileHandle.nullDevice
        do { try getcap.run() } catch { throw Failure.tpm2Tools("tpm2_getcap: \(error): install Debian's tpm2-tools") }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        getcap.waitUntilExit()
        guard getcap.terminationStatus == 0 else { throw Failure.tpm2Tools("tpm2_getcap \(capability) failed") }
        return text.split(separator: "\n").filter { $0.hasPrefix("- ") }.count
    }

    /// A port P with P and P + 1 both free on 127.0.0.1 (swtpm's server and control ports); never
    /// 2321, where the TCTI loader's default looks for a simulator.
    static func freePortPair() throws -> UInt16 {
        for _ in 0..<50 {
            let port = UInt16.random(in: 20_000...59_000)
            if bindable(port), bindable(port + 1) { return port }
        }
        throw Failure.noFreePorts
    }

    /// A port nothing listens on (bound and let go): where no TPM answers.
    static func closedPort() throws -> UInt16 {
        for _ in 0..<50 {
            let port = UInt16.random(in: 20_000...59_000)
            if bindable(port) { return port }
        }
        throw Failure.noFreePorts
    }

    static func bindable(_ port: UInt16) -> Bool { withLoopback(port) { bind($0, $1, $2) == 0 } }

    private static func accepts(_ port: UInt16) -> Bool { withLoopback(port) { connect($0, $1, $2) == 0 } }

    /// Runs `body` on a fresh TCP socket and 127.0.0.1:`port`, closing the socket after.
    static func withLoopback(_ port: UInt16, _ body: (Int32, UnsafePointer<sockaddr>, socklen_t) -> Bool) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }
}

/// A relay in front of one swtpm (its server and control ports) that records every byte passing
/// in either direction: what a sniffer on the TPM's bus would see.
private final class TPMWiretap: @unchecked Sendable {
    let port: UInt16
    private let target: UInt16
    private var listeners: [Int32]
    private let lock = NSLock()
    private var bytes: [UInt8] = []

    var tcti: String { "swtpm:host=127.0.0.1,port=\(port)" }
    var recorded: [UInt8] { lock.withLock { bytes } }

    init(target: UInt16) throws {
        self.target = target
        // A pair found free may be taken before it is bound: another pair, a few times.
        var chosen: (port: UInt16, listeners: [Int32])?
        for _ in 0..<5 where chosen == nil {
            let candidate = try SoftwareTPM.freePortPair()
            let bound = [candidate, candidate + 1].compactMap(Self.listener(on:))
            if bound.count == 2 { chosen = (candidate, bound) } else { bound.forEach { close($0) } }
        }
        guard let chosen else { throw SoftwareTPM.Failure.noFreePorts }
        port = chosen.port
        listeners = chosen.listeners
        for (offset, listener) in listeners.enumerated() {
            Thread.detachNewThread { [self] in relay(from: listener, to: target + UInt16(offset)) }
        }
    }

    private static func listener(on port: UInt16) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        guard SoftwareTPM.withLoopback(port, { _, address, length in bind(fd, address, length) == 0 && listen(fd, 8) == 0 }) else {
            close(fd)
            return nil
        }
        return fd
    }

    /// Ends the accept loops; only here are the listeners closed, so no other socket can have
    /// taken their numbers when they are shut down.
    func stop() {
        for listener in listeners { shutdown(listener, Int32(SHUT_RDWR)) }
        for listener in listeners { close(listener) }
        listeners.removeAll()
    }

    /// Each connection accepted on `listener` is joined to a new one to swtpm's `targetPort`
    /// (the swtpm TCTI opens one per command). Ends when `stop()` shuts the listener down.
    private func relay(from listener: Int32, to targetPort: UInt16) {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 && (errno == EINTR || errno == ECONNABORTED) { continue }
            guard client >= 0 else { return }
            let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard upstream >= 0, SoftwareTPM.withLoopback(targetPort, { connect(upstream, $1, $2) == 0 }) else {
                close(client)
                if upstream >= 0 { close(upstream) }
                continue
            }
            let finished = Countdown(2) { close(client); close(upstream) }
            Thread.detachNewThread { [self] in pump(client, upstream, finished) }
            Thread.detachNewThread { [self] in pump(upstream, client, finished) }
        }
    }

    private func pump(_ source: Int32, _ sink: Int32, _ finished: Countdown) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            lock.withLock { bytes += buffer[0..<count] }
            var sent = 0
            while sent < count {
                // MSG_NOSIGNAL: a peer gone (swtpm stopped in tearDown) is an error here, not a
                // SIGPIPE that ends the whole test process.
                let written = buffer[sent..<count].withUnsafeBytes { send(sink, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                guard written > 0 else { break }
                sent += written
            }
            guard sent == count else { break }
        }
        shutdown(sink, Int32(SHUT_WR))
        finished.done()
    }

    /// Runs `action` once `count` pumps are done (both directions of one connection).
    private final class Countdown: @unchecked Sendable {
        private let lock = NSLock()
        private var remaining: Int
        private let action: () -> Void
        init(_ count: Int, _ action: @escaping () -> Void) { remaining = count; self.action = action }
        func done() {
            let last = lock.withLock { remaining -= 1; return remaining == 0 }
            if last { action() }
        }
    }
}
