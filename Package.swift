// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "herald",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "herald", targets: ["herald"]),
        .library(name: "HeraldKafka", targets: ["HeraldKafka"]),
        .library(name: "HeraldApp", targets: ["HeraldApp"]),
    ],
    traits: [
        // The worker's allocations are many, small and freed on other threads than made them (an
        // outbound record is built on a build thread and freed on librdkafka's delivery thread);
        // jemalloc serves them with less CPU than glibc's malloc (docs/benchmarks.md, "Allocator").
        // Debian: libjemalloc-dev to build, libjemalloc2 to run. `--disable-default-traits` builds
        // with the C library's malloc.
        .trait(name: "Jemalloc", description: "Link the herald executable with jemalloc (Linux)."),
        .default(enabledTraits: ["Jemalloc"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
    ],
    targets: [
        // The system librdkafka (Debian: librdkafka-dev). Only HeraldKafka/RDKafka/ imports it.
        .systemLibrary(
            name: "CRdKafka",
            pkgConfig: "rdkafka",
            providers: [.apt(["librdkafka-dev"])]
        ),
        // Names OS threads (prctl), so `top -H` and profilers show Herald's threads.
        .systemLibrary(name: "CHeraldThread"),
        .target(
            name: "HeraldKafka",
            dependencies: [
                "CHeraldThread",
                "CRdKafka",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // ICU MessageFormat, plural rules and number/money/date formatting over the system ICU
        // (Debian: libicu-dev), behind a small C API.
        .target(
            name: "CHeraldICU",
            linkerSettings: [.linkedLibrary("icui18n"), .linkedLibrary("icuuc"), .linkedLibrary("icudata")]
        ),
        .target(name: "HeraldEvents"),
        .target(
            name: "HeraldCatalog",
            dependencies: ["CHeraldICU", "HeraldEvents", .product(name: "Yams", package: "Yams")]
        ),
        // The system SQLite (Debian: libsqlite3-dev). Only HeraldStore/SQLite/ imports it.
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .target(
            name: "HeraldStore",
            dependencies: [
                "CSQLite",
                "HeraldPolicy",
                "HeraldEvents",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "HeapModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "HeraldPolicy",
            dependencies: ["HeraldEvents"]
        ),
        // What an HTTP/2 connection driven frame by frame (the APNs client, the simulator's server)
        // must do itself.
        .target(
            name: "HeraldHTTP2",
            dependencies: [.product(name: "NIOHTTP2", package: "swift-nio-http2")]
        ),
        .target(
            name: "HeraldProviders",
            dependencies: ["HeraldEvents"]
        ),
        .target(
            name: "HeraldWorker",
            dependencies: [
                "HeraldEvents", "HeraldKafka", "HeraldCatalog", "HeraldPolicy", "HeraldProviders", "HeraldStore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // JSON Web Tokens as providers use them: ES256 (APNs) and RS256 (Google OAuth2), signed and
        // verified with swift-crypto.
        .target(
            name: "HeraldAuth",
            dependencies: [
                "HeraldEvents",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
        // APNs-, FCM- and Expo-like servers over HTTP/2 and TLS, for tests, benchmarks and `herald dev`.
        .target(
            name: "HeraldSimulator",
            dependencies: [
                "HeraldAuth",
                "HeraldEvents",
                "HeraldHTTP2",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "HeraldSender",
            dependencies: [
                "HeraldAuth",
                "HeraldEvents",
                "HeraldHTTP2",
                "HeraldKafka",
                "HeraldProviders",
                "HeraldStore",
                "HeraldWorker",
                "HeraldPolicy",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The system zlib (Debian: zlib1g-dev): gzip-compressed recorded logs.
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        // Recorded event logs through the worker's own code on event time: replay, reports, diffs,
        // and re-publishing a log into Kafka.
        .target(
            name: "HeraldReplay",
            dependencies: [
                "CZlib",
                "HeraldEvents",
                "HeraldKafka",
                "HeraldCatalog",
                "HeraldPolicy",
                "HeraldProviders",
                "HeraldStore",
                "HeraldWorker",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "HeraldApp",
            dependencies: [
                "HeraldKafka",
                "HeraldEvents",
                "HeraldCatalog",
                "HeraldProviders",
                "HeraldPolicy",
                "HeraldStore",
                "HeraldWorker",
                "HeraldSender",
                "HeraldSimulator",
                "HeraldAuth",
                "HeraldReplay",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Yams", package: "Yams"),
            ]
        ),
        .executableTarget(
            name: "herald",
            dependencies: [
                "HeraldApp",
                "HeraldKafka",
                "HeraldReplay",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            linkerSettings: [.linkedLibrary("jemalloc", .when(platforms: [.linux], traits: ["Jemalloc"]))]
        ),
        .target(
            name: "HeraldTestSupport",
            dependencies: [
                "HeraldKafka",
                "HeraldStore",
                "HeraldPolicy",
                "HeraldEvents",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                "HeraldSimulator",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        .testTarget(
            name: "HeraldWorkerTests",
            dependencies: ["HeraldWorker", "HeraldApp", "HeraldTestSupport", "herald"]
        ),
        .testTarget(
            name: "HeraldSenderTests",
            dependencies: [
                "HeraldSender", "HeraldSimulator", "HeraldAuth", "HeraldApp", "HeraldTestSupport", "HeraldPolicy",
                "HeraldProviders", "HeraldWorker", "HeraldEvents", "HeraldHTTP2",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "HeraldReplayTests",
            dependencies: [
                "HeraldReplay", "HeraldApp", "HeraldWorker", "HeraldCatalog", "HeraldPolicy", "HeraldStore",
                "HeraldTestSupport",
            ]
        ),
        .testTarget(
            name: "HeraldCLITests",
            // HeraldCatalog: the bench test reads the example catalog's kinds as Herald does.
            // HeraldWorker: `--version` prints the version dead letters carry.
            dependencies: ["herald", "HeraldCatalog", "HeraldWorker", "HeraldTestSupport"]
        ),
        .testTarget(
            name: "HeraldDeployTests",
            dependencies: [
                "HeraldApp", "HeraldWorker", "HeraldSender", "HeraldPolicy", "HeraldKafka", "HeraldTestSupport",
                .product(name: "Yams", package: "Yams"),
            ]
        ),
        .testTarget(
            name: "HeraldCatalogTests",
            dependencies: ["HeraldCatalog"],
            // Read by path (#filePath), not as a bundle resource.
            exclude: ["Goldens"]
        ),
        .testTarget(
            name: "HeraldStoreTests",
            dependencies: ["HeraldStore", "HeraldTestSupport"]
        ),
        .testTarget(
            name: "HeraldPolicyTests",
            dependencies: ["HeraldPolicy"]
        ),
        .testTarget(
            name: "HeraldProvidersTests",
            dependencies: ["HeraldProviders"]
        ),
        .testTarget(
            name: "HeraldEventsTests",
            dependencies: ["HeraldEvents"]
        ),
        .testTarget(
            name: "HeraldKafkaTests",
            dependencies: [
                "HeraldKafka",
                "HeraldTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6],
    cxxLanguageStandard: .cxx17
)
