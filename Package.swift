// swift-tools-version:6.0
// Latchkey: a software FIDO2 security key for Linux. No package dependencies:
// everything outside the toolchain comes from system C libraries.
import PackageDescription

let package = Package(
    name: "Latchkey",
    products: [
        .executable(name: "latchkey", targets: ["latchkey"]),
        // The modules as one library, for Fuzz/ (its own package, built only by scripts/fuzz).
        .library(name: "LatchkeyModules",
                 targets: ["Encoding", "CBOR", "CTAPHID", "CTAP", "FIDOCrypto", "Authenticator", "KeySealing", "CredentialStore",
                           "LinuxHID", "Trace", "Presence", "KeyService", "Rig", "DeviceTools", "FIDOClient", "SystemIO",
                           "SignalBridge", "Exchange", "WebDriver"]),
    ],
    targets: [
        // System libraries (Debian: libssl-dev, libsqlite3-dev, libudev-dev, zlib1g-dev).
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto",
                       providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3",
                       providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CUdev", pkgConfig: "libudev",
                       providers: [.apt(["libudev-dev"])]),
        // Sealing a store's master key (issue 14): tpm2-tss's ESAPI for a TPM 2.0, libsecret for
        // the login keyring. Imported by KeySealing alone.
        .systemLibrary(name: "CTSS", pkgConfig: "tss2-esys",
                       providers: [.apt(["libtss2-dev"])]),
        .systemLibrary(name: "CSecret", pkgConfig: "libsecret-1",
                       providers: [.apt(["libsecret-1-dev"])]),
        // zlib's raw DEFLATE for large blobs (CTAP), with its init macros in the module map's shim.
        .systemLibrary(name: "CZlib", pkgConfig: "zlib",
                       providers: [.apt(["zlib1g-dev"])]),
        // C for what Swift cannot import (macros, variadics, kernel struct layouts).
        .target(name: "CShims", dependencies: ["COpenSSL", "CSQLite"]),
        // SystemIO's GNU-only socket and eventfd calls: Glibc alone, so the ground floor pulls
        // in neither OpenSSL nor SQLite (which CShims carries).
        .target(name: "CSystemIO"),

        .target(name: "SystemIO", dependencies: ["CSystemIO", "Encoding"]),

        // Base64URL and JSON text, below everything that reads or writes them.
        .target(name: "Encoding"),
        .target(name: "CBOR", dependencies: ["Encoding"]),
        .target(name: "CTAP", dependencies: ["CBOR", "CZlib"]),
        .target(name: "CTAPHID"),
        .target(name: "FIDOCrypto", dependencies: ["COpenSSL", "CShims"]),
        .target(name: "Authenticator", dependencies: ["CTAP", "CBOR", "FIDOCrypto", "Encoding"]),
        // A store's master key sealed by the TPM, the login keyring or a passphrase.
        .target(name: "KeySealing", dependencies: ["FIDOCrypto", "CBOR", "SystemIO", "CTSS", "CSecret"]),
        .target(name: "CredentialStore",
                dependencies: ["KeySealing", "Authenticator", "FIDOCrypto", "SystemIO", "CSQLite", "CShims"]),
        .target(name: "LinuxHID", dependencies: ["SystemIO", "CUdev"]),
        .target(name: "Trace", dependencies: ["CTAPHID", "CTAP", "CBOR", "SystemIO", "Encoding"]),
        .target(name: "FIDOClient",
                dependencies: ["Encoding", "LinuxHID", "CTAPHID", "CTAP", "CBOR", "FIDOCrypto", "SystemIO"]),
        // Presence and user verification: who answers "is the user there?" and "is it them?" (auto,
        // deny, terminal, notify, control, polkit, fprintd), and the control socket that answers.
        .target(name: "Presence", dependencies: ["Authenticator", "FIDOCrypto", "LinuxHID", "SystemIO"]),
        // The running key: KeyRunner over the transport, its host, configuration and signals.
        .target(name: "KeyService",
                dependencies: ["Presence", "LinuxHID", "CTAPHID", "Authenticator", "CredentialStore", "Trace", "CTAP", "SystemIO",
                               "Encoding"]),
        // `latchkey rig`: many keys behind the WebDriver-style control API, events and faults.
        .target(name: "Rig",
                dependencies: ["Encoding", "KeyService", "Presence", "LinuxHID", "CTAPHID", "Authenticator", "CredentialStore", "CTAP", "CBOR",
                               "FIDOCrypto", "SystemIO"]),
        // `latchkey rig webdriver`: W3C WebDriver in front of the browser's driver, its WebAuthn
        // extension's commands answered with rig keys.
        .target(name: "WebDriver", dependencies: ["Rig", "SystemIO", "Encoding"]),
        // Tools for any FIDO device: the tracing proxy and a recorded key replayed as a device.
        .target(name: "DeviceTools", dependencies: ["KeyService", "Authenticator", "LinuxHID", "CTAPHID", "Trace", "SystemIO", "Encoding"]),
        // Passkeys that move: CXF export and import, other managers' formats, encrypted files.
        .target(name: "Exchange",
                dependencies: ["Encoding", "CredentialStore", "Authenticator", "CTAP", "CBOR", "FIDOCrypto"]),
        // The extension's native host: framing, the origin/RP ID rule, signals, the passkey provider's client.
        .target(name: "SignalBridge", dependencies: ["Encoding", "CredentialStore", "Authenticator", "FIDOClient", "CTAP", "CBOR", "FIDOCrypto", "SystemIO"]),
        .target(name: "CLI",
                dependencies: ["Encoding", "Rig", "WebDriver", "DeviceTools", "KeyService", "Presence", "KeySealing", "SignalBridge", "Exchange", "FIDOClient", "Trace", "LinuxHID", "CTAPHID", "Authenticator",
                               "CredentialStore", "CTAP", "CBOR", "FIDOCrypto", "SystemIO"]),
        .executableTarget(name: "latchkey", dependencies: ["CLI"]),
        // swift run -c release latchkey-bench (scripts/bench): figures as ratios to libcrypto baselines.
        .executableTarget(name: "latchkey-bench",
                          dependencies: ["Rig", "KeyService", "Presence", "FIDOClient", "Authenticator", "CredentialStore", "FIDOCrypto", "CTAP",
                                         "CTAPHID",
                                         "LinuxHID", "CBOR", "SystemIO", "KeySealing"],
                          path: "Benchmarks/LatchkeyBench"),

        .testTarget(name: "EncodingTests", dependencies: ["Encoding"]),
        .testTarget(name: "CBORTests", dependencies: ["CBOR"]),
        .testTarget(name: "FIDOCryptoTests", dependencies: ["FIDOCrypto", "COpenSSL", "CShims"],
                    exclude: ["Vectors"]),
        .testTarget(name: "CTAPTests", dependencies: ["CTAP", "CBOR"]),
        .testTarget(name: "CTAPHIDTests", dependencies: ["CTAPHID"]),
        .testTarget(name: "AuthenticatorTests",
                    dependencies: ["Authenticator", "CTAP", "CBOR", "FIDOCrypto", "COpenSSL", "CShims"]),
        .testTarget(name: "KeySealingTests", dependencies: ["KeySealing", "FIDOCrypto", "SystemIO", "TestScratch"]),
        .testTarget(name: "CredentialStoreTests",
                    dependencies: ["CredentialStore", "KeySealing", "Authenticator", "FIDOCrypto"]),
        .testTarget(name: "SystemIOTests", dependencies: ["SystemIO"]),
        .testTarget(name: "LinuxHIDTests", dependencies: ["LinuxHID", "SystemIO", "CShims"]),
        // Helpers shared by the test targets; no production code uses them. TestScratch (private
        // scratch directories) depends on nothing, so a low module's tests link only it.
        .target(name: "TestScratch", path: "Tests/TestScratch"),
        .target(name: "LatchkeyTestSupport",
                dependencies: ["TestScratch", "Authenticator", "CTAP", "CTAPHID", "FIDOClient", "KeyService", "Presence", "LinuxHID",
                               "SystemIO"],
                path: "Tests/LatchkeyTestSupport"),
        .testTarget(name: "TraceTests", dependencies: ["Trace", "CTAPHID", "CBOR", "LatchkeyTestSupport"]),
        .testTarget(name: "FIDOClientTests",
                    dependencies: ["FIDOClient", "LinuxHID", "CTAPHID", "CTAP", "CBOR", "FIDOCrypto", "LatchkeyTestSupport"]),
        .testTarget(name: "KeyServiceTests",
                    dependencies: ["KeyService", "Presence", "Authenticator", "CTAP", "CTAPHID", "SystemIO", "LinuxHID",
                                   // end-to-end checks: the key driven by the platform client
                                   "FIDOClient"]),
        .testTarget(name: "PresenceTests",
                    dependencies: ["Presence", "Authenticator", "SystemIO", "FIDOCrypto", "LatchkeyTestSupport",
                                   // `latchkey approve` against a key's control socket
                                   "CLI"]),
        .testTarget(name: "RigTests",
                    dependencies: ["Encoding", "Rig", "KeyService", "Presence", "Authenticator", "CBOR", "CTAP", "CTAPHID", "FIDOClient",
                                   "FIDOCrypto", "LinuxHID", "SystemIO", "LatchkeyTestSupport"]),
        .testTarget(name: "WebDriverTests", dependencies: ["WebDriver", "Rig", "Encoding", "SystemIO", "FIDOClient", "LinuxHID",
                                                           "CTAP", "CBOR", "FIDOCrypto", "LatchkeyTestSupport"]),
        .testTarget(name: "DeviceToolsTests", dependencies: ["DeviceTools", "LinuxHID", "SystemIO"]),
        .testTarget(name: "ExchangeTests",
                    dependencies: ["Encoding", "Exchange", "CredentialStore", "Authenticator", "CTAP", "CBOR", "FIDOCrypto", "LatchkeyTestSupport"]),
        .testTarget(name: "SignalBridgeTests",
                    dependencies: ["Encoding", "SignalBridge", "CredentialStore", "Authenticator", "FIDOClient", "Presence", "CTAP", "FIDOCrypto", "CBOR", "SystemIO", "LatchkeyTestSupport"]),
        .testTarget(name: "CLITests",
                    dependencies: ["Encoding", "CLI", "SignalBridge", "FIDOClient", "KeyService", "Presence", "Authenticator", "CredentialStore", "KeySealing", "LinuxHID",
                                   "CTAPHID", "CTAP", "CBOR", "FIDOCrypto", "LatchkeyTestSupport"]),
    ]
)
