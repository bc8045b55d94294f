import Authenticator
@testable import CLI
import CredentialStore
import FIDOClient
import FIDOCrypto
import Foundation
import KeyService
import LatchkeyTestSupport
import XCTest

/// `latchkey pin …` on a store: status read while a key may run, set/change --offline only when
/// no key holds the store's lock, PINs from files, the environment or the terminal.
final class PinCommandTests: XCTestCase {
    var store: TestStore!
    let output = CapturedOutput()

    override func setUpWithError() throws {
        store = try TestStore()
    }

    func pin(_ arguments: [String], environment: [String: String] = [:], terminal: (any UserTerminal)? = nil) -> CommandOutcome {
        output.clear()
        let io = output.io(environment: environment, terminal: terminal)
        return runCommand(PinCommand.group(io: { io }), arguments)
    }

    func storedHash() throws -> [UInt8]? {
        let opened = try store.open()
        defer { opened.close() }
        return try opened.loadPINState()?.pinHash?.copyBytes()
    }

    func testStatusOfAStoreWithoutAndWithAPIN() throws {
        XCTAssertEqual(pin(["status", "--store", store.directory]), .status(0))
        XCTAssertEqual(output.out, "PIN of the store \(store.directory): not set\nForce PIN change: no\nMinimum length: 4 characters")

        let open = try writeFile(store.scratch.path, "open-pin", "2468\n", mode: 0o644)
        XCTAssertEqual(pin(["set", "--offline", "--store", store.directory, "--pin-file", open]), .status(1))
        XCTAssertTrue(output.err.contains("is open to other users (mode 644): chmod 600"), output.err)
        XCTAssertNil(try storedHash(), "a PIN file others can read is refused")
        let file = try writeFile(store.scratch.path, "pin", "2468\n")
        XCTAssertEqual(pin(["set", "--offline", "--store", store.directory, "--pin-file", file]), .status(0))
        XCTAssertEqual(output.out, "PIN set on the store \(store.directory).")
        XCTAssertEqual(try storedHash(), Array(FIDOCrypto.SHA256.hash(Array("2468".utf8)).prefix(16)), "the newline is not part of the PIN")

        XCTAssertEqual(pin(["status", "--store", store.directory, "--json"]), .status(0))
        let status = try parseJSON(output.out)
        XCTAssertEqual(status["store"] as? String, store.directory)
        XCTAssertEqual(status["pinSet"] as? Bool, true)
        XCTAssertEqual(status["retries"] as? Int, 8)
        XCTAssertEqual(status["forcePINChange"] as? Bool, false)
        XCTAssertEqual(status["minPINLength"] as? Int, 4)
        XCTAssertNil(status["powerCycleNeeded"], "a store has no power-cycle state")
    }

    /// Status works while a key holds the store; set/change --offline refuse and say how to go through it.
    func testOfflineChangesRefuseAStoreAKeyIsRunningOn() throws {
        let running = try store.open(lock: .exclusive)
        defer { running.close() }
        XCTAssertEqual(pin(["status", "--store", store.directory]), .status(0))
        XCTAssertEqual(pin(["set", "--offline", "--store", store.directory], environment: ["LATCHKEY_PIN": "1234"]), .status(1))
        XCTAssertEqual(output.err, "Error: a key is running on the store \(store.directory): leave out --offline to go through it, "
                                   + "or stop it first")
        XCTAssertNil(try running.loadPINState())
    }

    func testOfflineChangeVerifiesTheCurrentPINAndCountsRetries() throws {
        XCTAssertEqual(pin(["set", "--offline", "--store", store.directory], terminal: ScriptedTerminal(["1357", "1357"])), .status(0))
        XCTAssertEqual(pin(["change", "--offline", "--store", store.directory],
                           environment: ["LATCHKEY_PIN": "0000", "LATCHKEY_NEW_PIN": "97531"]), .status(1))
        XCTAssertEqual(output.err, "Error: wrong PIN for the store \(store.directory) (7 attempts left before the key blocks its PIN)")
        XCTAssertEqual(pin(["change", "--offline", "--store", store.directory],
                           environment: ["LATCHKEY_PIN": "1357", "LATCHKEY_NEW_PIN": "97531"]), .status(0))
        XCTAssertEqual(try storedHash(), Array(FIDOCrypto.SHA256.hash(Array("97531".utf8)).prefix(16)))
        XCTAssertEqual(pin(["status", "--store", store.directory, "--json"]), .status(0))
        XCTAssertEqual(try parseJSON(output.out)["retries"] as? Int, 8, "a correct PIN restores the retries")
    }

    func testPolicyAndInputFailures() throws {
        XCTAssertEqual(pin(["set", "--offline", "--store", store.directory], environment: ["LATCHKEY_PIN": "12"]), .status(1))
        XCTAssertEqual(output.err, "Error: the PIN is too short: the key needs at least 4 characters, this one has 2")
        XCTAssertEqual(pin(["set", "--offline", "--store", store.directory], environment: ["LATCHKEY_PIN": ""]), .status(1))
        XCTAssertEqual(output.err, "Error: the PIN is empty")
        XCTAssertEqual(pin(["set", "--offline", "--store", store.directory]),
                       .usage("no terminal to read the PIN from: give --pin-file FILE or set LATCHKEY_NEW_PIN"))
        XCTAssertEqual(pin(["set", "--offline", "--store", store.directory, "--pin-file", store.scratch.path + "/missing"]), .status(1))
        XCTAssertTrue(output.err.hasPrefix("Error: cannot read --pin-file \(store.scratch.path)/missing: "), output.err)
        let twoLines = try writeFile(store.scratch.path, "two", "1234\n5678\n")
        XCTAssertEqual(pin(["set", "--offline", "--store", store.directory, "--pin-file", twoLines]), .status(1))
        XCTAssertTrue(output.err.contains("has more than one line"), output.err)
        XCTAssertEqual(pin(["set", "--offline", "--store", store.directory], terminal: ScriptedTerminal(["1234", "4321"])), .status(1))
        XCTAssertEqual(output.err, "Error: the two new PINs differ")
        XCTAssertNil(try storedHash(), "nothing was set")
        let crlf = try writeFile(store.scratch.path, "crlf", "ab€d\r\n")
        XCTAssertEqual(pin(["set", "--offline", "--store", store.directory, "--pin-file", crlf]), .status(0))
        XCTAssertEqual(try storedHash(), Array(FIDOCrypto.SHA256.hash(Array("ab€d".utf8)).prefix(16)))
    }

    /// latchkey(1): LATCHKEY_NEW_PIN is the new PIN, for pin set as for pin change; LATCHKEY_PIN,
    /// which pin set read before, still works when LATCHKEY_NEW_PIN is not set.
    func testPinSetReadsTheNewPINVariableTheManPageNames() throws {
        XCTAssertEqual(pin(["set", "--offline", "--store", store.directory],
                           environment: ["LATCHKEY_NEW_PIN": "86420", "LATCHKEY_PIN": "11111"]), .status(0))
        XCTAssertEqual(try storedHash(), Array(FIDOCrypto.SHA256.hash(Array("86420".utf8)).prefix(16)))
        let other = try TestStore()
        store = other
        XCTAssertEqual(pin(["set", "--offline", "--store", store.directory], environment: ["LATCHKEY_PIN": "11111"]), .status(0))
        XCTAssertEqual(try storedHash(), Array(FIDOCrypto.SHA256.hash(Array("11111".utf8)).prefix(16)))
        let page = ManPage.main(LatchkeyCLI.commands, about: .init(version: "9.9", date: "2026-01-01", examples: []))
        XCTAssertTrue(page.contains(".B LATCHKEY_NEW_PIN\nThe new PIN for pin set and pin change"), "latchkey(1) says otherwise")
    }

    /// A PIN too short for the key is refused as soon as it is typed, not after typing it twice.
    func testTooShortPINIsRefusedAtTheFirstPrompt() throws {
        let terminal = ScriptedTerminal(["123", "123"])
        XCTAssertEqual(pin(["set", "--offline", "--store", store.directory], terminal: terminal), .status(1))
        XCTAssertEqual(output.err, "Error: the PIN is too short: the key needs at least 4 characters, this one has 3")
        XCTAssertEqual(terminal.prompts.count, 1, "asked again after a PIN that could never do: \(terminal.prompts)")
        XCTAssertNil(try storedHash())
    }

    func testUsageErrors() {
        // A store needs no --offline: with no key running on it, the store itself; the PIN is then asked for.
        XCTAssertEqual(pin(["set", "--store", store.directory]),
                       .usage("no terminal to read the PIN from: give --pin-file FILE or set LATCHKEY_NEW_PIN"))
        XCTAssertEqual(pin(["set", "--offline", "--socket", "/k"]), .usage("--offline is for a store (--name/--store), not a device"))
        XCTAssertEqual(pin(["status", "--pin-file", "/p"]), .usage("unknown option '--pin-file' for 'pin status'"))
        XCTAssertEqual(pin(["set", "--new-pin-file", "/p", "--offline"]), .usage("unknown option '--new-pin-file' for 'pin set'"))
        XCTAssertEqual(pin(["status", "--store", store.scratch.path + "/none"]), .status(1))
    }
}
