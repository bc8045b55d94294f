import CBOR
import FIDOCrypto

extension MasterKeySeal {
    /// master.key's record when sealed: the method's fields, and the master key under AES-256-GCM
    /// with the wrapping key the method gives back (the header and the method as associated data,
    /// so a record cannot be passed off as another method's).
    struct Sealed {
        enum Wrapping: Equatable {
            case passphrase(Scrypt.Parameters, salt: [UInt8])
            case tpm(TPMSeal.Blob)
            case keyring(item: String)

            var method: String {
                switch self {
                case .passphrase: "passphrase"
                case .tpm: "tpm"
                case .keyring: "keyring"
                }
            }
        }

        var wrapping: Wrapping
        var nonce: [UInt8]
        var sealed: [UInt8]

        var associatedData: [UInt8] { MasterKeySeal.header + Array(wrapping.method.utf8) }

        var state: State {
            switch wrapping {
            case let .passphrase(parameters, _): .sealedWithPassphrase(parameters)
            case let .tpm(blob): .sealedWithTPM(pcrs: blob.pcrs, pinned: blob.storageKeyName != nil)
            case let .keyring(item): .sealedWithKeyring(item: item)
            }
        }

        static func seal(_ key: SecretBytes, under wrappingKey: SecretBytes, wrapping: Wrapping) throws(SealError) -> Sealed {
            let nonce = SecureRandom.bytes(count: 12)
            var record = Sealed(wrapping: wrapping, nonce: nonce, sealed: [])
            var plain = key.copyBytes()
            defer { plain.wipe() }
            do {
                let sealed = try AES256GCM.seal(plain, key: wrappingKey, nonce: nonce, authenticating: record.associatedData)
                record.sealed = sealed.ciphertext + sealed.tag
            } catch {
                throw .io("sealing the master key failed: \(error)")
            }
            return record
        }

        /// The master key, or nil when the wrapping key does not open it.
        func open(under wrappingKey: SecretBytes) -> SecretBytes? {
            guard var key = try? AES256GCM.open(Array(sealed.prefix(MasterKeyFile.keyCount)), tag: Array(sealed.suffix(16)),
                                                key: wrappingKey, nonce: nonce, authenticating: associatedData) else { return nil }
            defer { key.wipe() }
            return SecretBytes(key)
        }

        init(wrapping: Wrapping, nonce: [UInt8], sealed: [UInt8]) {
            self.wrapping = wrapping; self.nonce = nonce; self.sealed = sealed
        }

        init(decoding contents: [UInt8], path: String) throws(SealError) {
            guard contents.starts(with: MasterKeySeal.header),
                  let map = try? CBORDecoder.decode(Array(contents.dropFirst(MasterKeySeal.header.count))) else {
                throw .corrupt("\(path) is neither a 32-byte key nor a sealed one")
            }
            guard let nonce = map["nonce"]?.bytesValue, nonce.count == 12,
                  let sealed = map["sealed"]?.bytesValue, sealed.count == MasterKeyFile.keyCount + 16 else {
                throw .corrupt("\(path) is a sealed master key with missing or malformed fields")
            }
            switch map["method"]?.stringValue {
            case "passphrase":
                guard map["kdf"]?.stringValue == "scrypt",
                      let logN = map["logN"]?.uint64Value.flatMap({ UInt8(exactly: $0) }),
                      let r = map["r"]?.uint64Value.flatMap({ UInt32(exactly: $0) }),
                      let p = map["p"]?.uint64Value.flatMap({ UInt32(exactly: $0) }),
                      let salt = map["salt"]?.bytesValue, salt.count >= 16 else {
                    throw .corrupt("\(path) is a passphrase-sealed master key with missing or malformed scrypt fields")
                }
                let parameters = Scrypt.Parameters(logN: logN, r: r, p: p)
                if let problem = parameters.problem { throw .corrupt("\(path) asks for more than Latchkey allows: \(problem)") }
                self.init(wrapping: .passphrase(parameters, salt: salt), nonce: nonce, sealed: sealed)
            case "tpm":
                guard let publicArea = map["tpmPublic"]?.bytesValue, !publicArea.isEmpty, publicArea.count <= 1024,
                      let privateArea = map["tpmPrivate"]?.bytesValue, !privateArea.isEmpty, privateArea.count <= 1024,
                      case let .array(list)? = map["pcrs"],
                      let pcrs = Optional(list.compactMap { $0.uint64Value.flatMap { UInt8(exactly: $0) } }),
                      pcrs.count == list.count, pcrs.allSatisfy({ $0 < 24 }) else {
                    throw .corrupt("\(path) is a TPM-sealed master key with missing or malformed fields")
                }
                // The storage key's name, recorded since 2026-12-03; a record without one is read (for
                // `store status` and to be upgraded by `store seal --tpm`) but not opened otherwise.
                let storageKeyName = map["tpmStorageKey"]?.bytesValue
                if map["tpmStorageKey"] != nil, storageKeyName.map({ (2...66).contains($0.count) }) != true {
                    throw .corrupt("\(path) is a TPM-sealed master key with a malformed storage key name")
                }
                self.init(wrapping: .tpm(TPMSeal.Blob(publicArea: publicArea, privateArea: privateArea, pcrs: pcrs,
                                                      storageKeyName: storageKeyName)),
                          nonce: nonce, sealed: sealed)
            case "keyring":
                guard let item = map["item"]?.stringValue, item.count == 32,
                      item.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                                             || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }) else {
                    throw .corrupt("\(path) is a keyring-sealed master key with a missing or malformed item name")
                }
                self.init(wrapping: .keyring(item: item), nonce: nonce, sealed: sealed)
            default:
                throw .corrupt("\(path) is sealed by a method this Latchkey does not know")
            }
        }

        func encoded() -> [UInt8] {
            var fields: [CBORValue: CBORValue] = ["method": .textString(wrapping.method)]
            switch wrapping {
            case let .passphrase(parameters, salt):
                fields.merge(["kdf": "scrypt", "logN": .unsignedInt(UInt64(parameters.logN)),
                              "r": .unsignedInt(UInt64(parameters.r)), "p": .unsignedInt(UInt64(parameters.p)),
                              "salt": .byteString(salt)]) { $1 }
            case let .tpm(blob):
                fields.merge(["tpmPublic": .byteString(blob.publicArea), "tpmPrivate": .byteString(blob.privateArea),
                              "pcrs": .array(blob.pcrs.map { .unsignedInt(UInt64($0)) })]) { $1 }
                if let name = blob.storageKeyName { fields["tpmStorageKey"] = .byteString(name) }
            case let .keyring(item):
                fields["item"] = .textString(item)
            }
            fields["nonce"] = .byteString(nonce)
            fields["sealed"] = .byteString(sealed)
            return MasterKeySeal.header + CBORValue.map(fields).encoded()
        }
    }
}
