import FIDOCrypto
import Foundation
import Synchronization

/// `LATCHKEY_PIN` and `LATCHKEY_NEW_PIN` leave the environment as the process starts, before
/// anything reads it: their bytes go into `SecretBytes`, the environment's own copy is zeroed
/// where it lies (so /proc/PID/environ shows zeros) and the variable is unset (so no child and
/// no `ProcessInfo` dictionary, whose Strings could not be wiped, ever sees the PIN).
enum PINEnvironment {
    static let pinName = "LATCHKEY_PIN"
    static let newPINName = "LATCHKEY_NEW_PIN"
    static let names = [pinName, newPINName]

    private static let taken = Mutex<[String: SecretBytes]>([:])

    /// Takes the PIN variables out of the environment (once; later calls take nothing new).
    static func take() {
        for name in names {
            guard let value = getenv(name) else { continue }
            let length = strlen(value)
            let secret = SecretBytes(copying: UnsafeRawBufferPointer(start: value, count: length))
            memset(value, 0, length)
            unsetenv(name)
            taken.withLock { $0[name] = secret }
        }
    }

    /// What `take` found, by name.
    static var values: [String: SecretBytes] { taken.withLock { $0 } }

    /// Moves PIN variables out of an environment dictionary (one a test made up) into secrets.
    static func split(_ environment: inout [String: String]) -> [String: SecretBytes] {
        var secrets: [String: SecretBytes] = [:]
        for name in names {
            if let value = environment.removeValue(forKey: name) { secrets[name] = SecretBytes(Array(value.utf8)) }  // a test's own String
        }
        return secrets
    }
}
