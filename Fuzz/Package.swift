// swift-tools-version:6.0
// libFuzzer targets for Latchkey: one per entry point a hostile peer reaches. Its own package so
// that the project's `swift build` never builds them; scripts/fuzz builds them with
// `-Xswiftc -sanitize=fuzzer,address` and runs them (Fuzz/README.md).
import PackageDescription

let latchkey: Target.Dependency = .product(name: "LatchkeyModules", package: "Latchkey")

/// The targets, each `Targets/<name>/<name>.swift` defining `LLVMFuzzerTestOneInput`.
let fuzzTargets = [
    "FuzzCBOR",                 // the CBOR decoder: decode → encode → decode identity
    "FuzzCTAPHID",              // reassembly identity; the state machine across channels and connections
    "FuzzMakeCredential",       // CTAP2 parse + handle, one command family each, on an in-memory store
    "FuzzGetAssertion",
    "FuzzClientPIN",
    "FuzzCredentialManagement",
    "FuzzLargeBlobs",
    "FuzzDeflate",              // large blobs as clients write them: DEFLATE streams, sealed entries
    "FuzzConfigReset",
    "FuzzU2F",                  // U2F APDUs
    "FuzzUHIDEvent",            // the /dev/uhid event decoder
    "FuzzUHIDBroker",           // the uhid broker's rules: what any local user sends the root broker
    "FuzzTrace",                // the trace file parser and decoder
    "FuzzControl",              // the control socket's JSON requests
    "FuzzRig",                  // the rig control API's JSON request lines, on a rig with a key
    "FuzzSignalBridge",         // the native-messaging host: frames and websites' signals, on a real store
    "FuzzImport",               // files to import or restore: CXF, Bitwarden, KeePassXC, encrypted headers, backups
    "FuzzWebDriver",            // HTTP/1.1 to and from `latchkey rig webdriver`, in pieces; its WebAuthn commands
]

let package = Package(
    name: "LatchkeyFuzz",
    dependencies: [.package(name: "Latchkey", path: "..")],
    targets: [
        .target(name: "FuzzSupport", dependencies: [latchkey], path: "Targets/FuzzSupport"),
    ] + fuzzTargets.map { name in
        .executableTarget(name: name, dependencies: [latchkey, "FuzzSupport"], path: "Targets/\(name)")
    }
)
