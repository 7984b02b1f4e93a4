// swift-tools-version: 6.1
import PackageDescription

// The layers, bottom up. KeyVaultCrypto is the only module that sees C; the
// core modules build and test without any HTTP or database dependency.
let package = Package(
    name: "KeyVault",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "keyctl", targets: ["keyctl"]),
        // KeyVaultMnemonic: BIP39 tools of any length (keyctl's recovery commands), public beside the library.
        .library(name: "KeyVault", targets: ["KeyVault", "KeyVaultMnemonic"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
    ],
    targets: [
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium",
                       providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "CLibCrypto", pkgConfig: "libcrypto",
                       providers: [.apt(["libssl-dev"])]),
        .target(name: "KeyVaultCrypto", dependencies: ["CSodium", "CLibCrypto"]),
        .target(name: "KeyVaultMnemonic", dependencies: ["KeyVaultCrypto"]),
        // Wire and domain types: no crypto, no C.
        .target(name: "KeyVaultModel"),
        // The signed formats both sides check (account chain, request signatures):
        // public-key operations and hashes only.
        .target(name: "KeyVaultProtocol", dependencies: ["KeyVaultCrypto", "KeyVaultModel"]),
        // The client's key hierarchy: recovery keys, anchors, boxes and wraps opened
        // and checked. The service never links it (Scripts/check-layers.sh).
        .target(name: "KeyVaultVault", dependencies: ["KeyVaultCrypto", "KeyVaultMnemonic", "KeyVaultModel", "KeyVaultProtocol"]),
        // The client: HTTP to the service, the device home, and every flow of
        // docs/api.md from the device's side, verifying what the server sends.
        .target(name: "KeyVault", dependencies: ["KeyVaultCrypto", "KeyVaultMnemonic", "KeyVaultModel", "KeyVaultProtocol", "KeyVaultVault"]),
        .target(name: "KeyVaultStore", dependencies: [
            "KeyVaultModel",
            .product(name: "GRDB", package: "GRDB.swift"),
        ]),
        // The same store on PostgreSQL (postgres-nio), for several replicas on one database.
        .target(name: "KeyVaultPostgres", dependencies: [
            "KeyVaultModel", "KeyVaultStore",
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The service. It depends on nothing that unwraps keys (no KeyVaultMnemonic,
        // no client vault): Scripts/check-layers.sh enforces it.
        .target(name: "KeyVaultServer", dependencies: [
            "KeyVaultModel", "KeyVaultProtocol", "KeyVaultStore", "KeyVaultPostgres",
            .product(name: "Hummingbird", package: "hummingbird"),
            // TLS on swift-nio-ssl (--tls-cert, --tls-key).
            .product(name: "HummingbirdCore", package: "hummingbird"),
            .product(name: "HummingbirdTLS", package: "hummingbird"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            // GET /metrics: swift-metrics handles into a Prometheus registry of the application's own.
            .product(name: "CoreMetrics", package: "swift-metrics"),
            .product(name: "Prometheus", package: "swift-prometheus"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
        ], resources: [.embedInCode("openapi.json")]),  // compiled into the binary (PackageResources.openapi_json): no bundle to lose
        .target(name: "KeyVaultCommands", dependencies: [
            "KeyVaultMnemonic", "KeyVault",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            // --ca-cert: URLSession on Linux cannot trust an extra CA (TrustingTransport.swift).
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
        ]),
        // Where client and server meet: the root command, with `serve`.
        .executableTarget(name: "keyctl", dependencies: [
            "KeyVaultCommands", "KeyVaultServer", "KeyVaultStore",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The family story of seed 002 with the public API only (ExampleTests type-checks
        // it again outside this package, where `package` declarations are out of reach).
        .executableTarget(name: "FamilyRecords", dependencies: ["KeyVault"], path: "Examples/FamilyRecords"),
        .executableTarget(
            name: "keyvault-bench",
            dependencies: ["KeyVaultCrypto", "KeyVaultMnemonic", "KeyVaultProtocol", "KeyVaultModel", "KeyVaultStore", "KeyVaultPostgres", "CSodium",
                           .product(name: "Logging", package: "swift-log")],
            path: "Benchmarks/Sources/keyvault-bench"),

        // Fuzz targets (Fuzz/Targets) and their libFuzzer driver: `bash Scripts/fuzz.sh TARGET SECONDS`
        // builds keyvault-fuzz with -sanitize=fuzzer,address; built plainly it replays inputs.
        // No server module: the fuzz build (sanitizers, its own scratch path) stays small.
        .target(name: "KeyVaultFuzzing", dependencies: [
            "KeyVaultCrypto", "KeyVaultMnemonic", "KeyVaultModel", "KeyVaultProtocol",
        ], path: "Fuzz/Targets"),
        .executableTarget(name: "keyvault-fuzz", dependencies: ["KeyVaultFuzzing"], path: "Fuzz/Driver"),

        // What every test target shares (vector files, temporary directories, the built
        // binaries and a process runner, a real `keyctl serve`): Foundation and the bottom
        // layer (its thread helper) only, so the fast targets stay fast.
        .target(name: "KeyVaultTestSupport", dependencies: ["KeyVaultCrypto"], path: "Tests/Support"),
        .testTarget(name: "KeyVaultCryptoTests", dependencies: [
            "KeyVaultCrypto", "KeyVaultTestSupport",
            .product(name: "PropertyBased", package: "swift-property-based"),
        ], resources: [.copy("Vectors")]),
        .testTarget(name: "KeyVaultMnemonicTests", dependencies: [
            "KeyVaultMnemonic", "KeyVaultTestSupport",
            .product(name: "PropertyBased", package: "swift-property-based"),
        ], resources: [.copy("Vectors")]),
        .testTarget(name: "KeyVaultModelTests", dependencies: ["KeyVaultModel"]),
        .testTarget(name: "KeyVaultStoreTests", dependencies: [
            "KeyVaultStore", "KeyVaultPostgres", "KeyVaultModel", "KeyVaultCrypto", "KeyVaultTestSupport",
            .product(name: "GRDB", package: "GRDB.swift"),
        ]),
        .testTarget(name: "KeyVaultVaultTests", dependencies: ["KeyVaultVault", "KeyVaultMnemonic", "KeyVaultCrypto", "KeyVaultTestSupport"],
                    resources: [.copy("Vectors")]),
        .testTarget(name: "KeyVaultProtocolTests", dependencies: ["KeyVaultProtocol", "KeyVaultCrypto", "KeyVaultModel", "KeyVaultTestSupport"],
                    resources: [.copy("Vectors")]),
        .testTarget(name: "KeyVaultServerTests", dependencies: [
            "KeyVaultServer", "KeyVaultProtocol", "KeyVaultCrypto", "KeyVaultPostgres", "KeyVaultTestSupport",
            .product(name: "HummingbirdTesting", package: "hummingbird"),
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
        ], resources: [.copy("Vectors")]),
        .testTarget(name: "KeyVaultTests", dependencies: [
            "KeyVault", "KeyVaultServer", "KeyVaultStore", "KeyVaultProtocol", "KeyVaultVault", "KeyVaultMnemonic",
            "KeyVaultCrypto", "KeyVaultModel", "KeyVaultTestSupport",
            .product(name: "HummingbirdTesting", package: "hummingbird"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
        ], resources: [.copy("Vectors")]),
        .testTarget(name: "KeyVaultFuzzTests", dependencies: ["KeyVaultFuzzing", "KeyVaultTestSupport"]),
        .testTarget(name: "KeyVaultCommandsTests", dependencies: [
            "KeyVaultCommands", "keyctl", "FamilyRecords", "KeyVaultProtocol", "KeyVaultModel", "KeyVaultCrypto",
            "KeyVaultTestSupport", "KeyVaultPostgres",
        ]),
    ],
    swiftLanguageModes: [.v6]
)
