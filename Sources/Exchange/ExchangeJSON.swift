import Encoding

/// Exchange's JSON reading: the shared reader (Encoding's JSONReader), its errors
/// `ExchangeError.malformed` with the member's path.
typealias ExchangeJSON = JSONReader<ExchangeError>

extension JSONReader where Failure == ExchangeError {
    init(_ members: [String: JSONDocument], path: String) {
        self.init(members, path: path, failure: { .malformed($0) })
    }
}
