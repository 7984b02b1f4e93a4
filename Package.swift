// swift-tools-version: 6.1
import PackageDescription

// The layers, bottom up. KeyVaultCrypto is the only module that sees C; the
// core modules build and test without any HTTP or database dependency.
let package = Package(
    name: "KeyVault",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "keyctl", targets: ["keyctl"]),
        .library(name: "KeyVaultCrypto", targets: ["KeyVaultCrypto"]),
        .library(name: "KeyVaultMnemonic", targets: ["KeyVaultMnemonic"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
    ],
    targets: [
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium",
                       providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "CLibCrypto", pkgConfig: "libcrypto",
                       providers: [.apt(["libssl-dev"])]),
        .target(name: "KeyVaultCrypto", dependencies: ["CSodium", "CLibCrypto"]),
        .target(name: "KeyVaultMnemonic", dependencies: ["KeyVaultCrypto"]),
        .target(name: "KeyVaultCommands", dependencies: [
            "KeyVaultCrypto", "KeyVaultMnemonic",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        .executableTarget(name: "keyctl", dependencies: ["KeyVaultCommands"]),
        .executableTarget(
            name: "keyvault-bench",
            dependencies: ["KeyVaultCrypto", "KeyVaultMnemonic", "CSodium"],
            path: "Benchmarks/Sources/keyvault-bench"),

        .testTarget(name: "KeyVaultCryptoTests", dependencies: [
            "KeyVaultCrypto",
            .product(name: "PropertyBased", package: "swift-property-based"),
        ], resources: [.copy("Vectors")]),
        .testTarget(name: "KeyVaultMnemonicTests", dependencies: [
            "KeyVaultMnemonic",
            .product(name: "PropertyBased", package: "swift-property-based"),
        ], resources: [.copy("Vectors")]),
        .testTarget(name: "KeyVaultCommandsTests", dependencies: ["KeyVaultCommands", "keyctl"]),
    ],
    swiftLanguageModes: [.v6]
)
