import Foundation
import FuzzSupport
import KeyService
import Rig
import SystemIO

/// The rig control API's request lines (`Rig.respond(to:)`, what `RigConnection` answers), on a
/// rig with one socket key that holds one credential. Invariants: never a trap; one response
/// line per request, a JSON object with exactly one of "result" and "error", an error with a
/// code of the protocol and a message. Skipped: answers that wait for a request (they would
/// wait up to their timeout) and socket keys the input would place on the file system.
let rig: Rig = {
    // tmpfs where there is one: the rig's stores commit durably (see FuzzSignalBridge).
    let base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp"
    var template = Array("\(base)/lk-fuzzrig-XXXXXX".utf8CString)
    guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else { fatalError("mkdtemp") }
    let root = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    let rig = Rig(root: root, uhidPath: "/nonexistent/uhid", logger: Logger(level: .error, sink: { _ in }))
    let setup = [
        #"{"v":1,"id":1,"method":"addAuthenticator","params":{"authenticatorId":"k1","transport":"socket","socketPath":"\#(root)/k1.sock","hasUserVerification":true}}"#,
        #"{"v":1,"id":2,"method":"addCredential","params":{"authenticatorId":"k1","credential":{"credentialId":"AAECAwQFBgcICQoLDA0ODw","isResidentCredential":true,"rpId":"fuzz.example","userHandle":"AQ","privateKey":"MC4CAQAwBQYDK2VwBCIEIAABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhscHR4f"}}}"#,
    ]
    for line in setup {
        let response = String(decoding: rig.respond(to: Array(line.utf8)), as: UTF8.self)
        invariant(response.contains("\"result\""), "setup failed: \(response)")
    }
    return rig
}()

let codes: Set<String> = ["parseError", "unknownMethod", "invalidParams", "noSuchAuthenticator", "noSuchCredential",
                          "unsupported", "failed", "tooMany"]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let line = FuzzInput(data, size).bytes
    if let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any] {
        let method = object["method"] as? String
        if method == "answerPresence" || method == "answerUserVerification" { return 0 }
        if method == "addAuthenticator", let params = object["params"] as? [String: Any], params["transport"] as? String == "socket" {
            return 0
        }
    }
    let response = rig.respond(to: line)
    invariant(response.last == 0x0A && !response.dropLast().contains(0x0A), "not one line: \(hex(response))")
    guard let object = (try? JSONSerialization.jsonObject(with: Data(response.dropLast()))) as? [String: Any] else {
        invariant(false, "not a JSON object: \(hex(response))")
        return 0
    }
    invariant((object["result"] == nil) != (object["error"] == nil), "result and error: \(object)")
    if let error = object["error"] as? [String: Any] {
        invariant(codes.contains(error["code"] as? String ?? ""), "unknown code in \(error)")
        invariant(!(error["message"] as? String ?? "").isEmpty, "an error without a message")
    }
    return 0
}
