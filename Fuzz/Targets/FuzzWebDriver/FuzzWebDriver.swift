import Encoding
import FuzzSupport
import WebDriver

/// What a WebDriver client (or anything that reaches 127.0.0.1) sends `latchkey rig webdriver`,
/// and what a driver answers it: HTTP/1.1 read as it arrives, in pieces the input chooses.
/// Invariants: never a trap; a request read is passed on as bytes that read back as the same
/// request (method, target, body, end-to-end fields: nothing smuggled in or lost); a WebAuthn
/// command's answer is a WebDriver JSON body with `value` and a status of WebDriver's table.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let mode = input.byte()
    let piece = Int(input.byte() % 64) + 1
    let stream = input.take(input.remaining)
    var reader = HTTPMessageReader()
    var offset = 0
    var failed = false
    while offset < stream.count, !failed {
        reader.append(Array(stream[offset..<min(offset + piece, stream.count)]))
        offset += piece
        if mode & 1 == 1 {
            if offset >= stream.count { reader.finish() }
            do {
                while let response = try reader.nextResponse(toHEAD: mode & 2 == 2) {
                    invariant((100...999).contains(response.status), "status \(response.status)")
                }
            } catch {
                invariant(!error.message.isEmpty, "an error without a message")
                failed = true
            }
        } else {
            do {
                while let request = try reader.nextRequest() { check(request) }
            } catch {
                invariant(!error.message.isEmpty && error.status >= 400, "error \(error.status)")
                failed = true
            }
        }
    }
    return 0
}

/// The same request read back from what the intermediary would send the driver; its route and
/// (for a WebAuthn command) its answer.
func check(_ request: HTTPRequest) {
    var again = HTTPMessageReader()
    again.append(request.serialized(host: "127.0.0.1:9515"))
    guard let copy = try? again.nextRequest() else { return invariant(false, "a passed-on request does not read back") }
    invariant(copy.method == request.method && copy.target == request.target && copy.body == request.body,
              "the request changed on its way")
    var expected = request.headers.endToEnd
    expected.remove("Host")
    var got = copy.headers.endToEnd
    got.remove("Host")
    invariant(expected == got, "fields changed on the way")
    invariant(!again.hasPartialMessage, "bytes left over after a passed-on request")
    guard let segments = request.pathSegments else { return }
    guard case .virtualAuthenticator(let session, let command) = WebDriverRoute(method: request.method, segments: segments) else { return }
    let authenticators = VirtualAuthenticators(transport: .usb) { _ in
        Array(#"{"id":1,"result":{"authenticatorId":"k1","credentials":[{"credentialId":"AQ","rpId":"x","signCount":1}]}}"#.utf8)
    }
    authenticators.sessionStarted("s")
    let response = authenticators.answer(command, session: session, body: request.body)
    invariant([200, 400, 404, 405, 500].contains(response.status), "status \(response.status)")
    invariant(JSONDocument.parse(response.body)?["value"] != nil, "an answer without a value")
}
