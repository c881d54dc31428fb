// swift-tools-version:6.2
// 6.2: the oldest toolchain whose language the code uses (`nonisolated(nonsending)`); the
// README's "Requirements" lists what sets the floor.
import PackageDescription

/// AsyncHTTPClient, for builds with the `AsyncHTTPClient` trait only: a default build resolves
/// no dependency at all.
let asyncHTTPClient: Target.Dependency = .product(
  name: "AsyncHTTPClient", package: "async-http-client",
  condition: .when(traits: ["AsyncHTTPClient"]))

/// The SwiftNIO modules whose error types the AsyncHTTPClient transport maps (already in
/// AsyncHTTPClient's closure; nothing more is fetched).
let nioForTransport: [Target.Dependency] = [
  .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["AsyncHTTPClient"])),
  .product(name: "NIOHTTP1", package: "swift-nio", condition: .when(traits: ["AsyncHTTPClient"])),
  .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: ["AsyncHTTPClient"])),
  .product(
    name: "NIOSSL", package: "swift-nio-ssl", condition: .when(traits: ["AsyncHTTPClient"])),
]

/// swift-log, swift-metrics and swift-distributed-tracing, for builds with the `Observability`
/// trait only: the adapters that turn the clients' internal events into logs, metrics and spans.
let observability: [Target.Dependency] = [
  // Logging also serves the Valkey trait's tests (a `ValkeyClient` takes a logger).
  .product(
    name: "Logging", package: "swift-log", condition: .when(traits: ["Observability", "Valkey"])),
  .product(name: "Metrics", package: "swift-metrics", condition: .when(traits: ["Observability"])),
  .product(
    name: "Tracing", package: "swift-distributed-tracing",
    condition: .when(traits: ["Observability"])),
]

/// The backends' own test kits, for the test targets of builds with the `Observability` trait.
let observabilityTestKits: [Target.Dependency] = [
  .product(
    name: "InMemoryLogging", package: "swift-log", condition: .when(traits: ["Observability"])),
  .product(
    name: "MetricsTestKit", package: "swift-metrics",
    condition: .when(traits: ["Observability"])),
  .product(
    name: "InMemoryTracing", package: "swift-distributed-tracing",
    condition: .when(traits: ["Observability"])),
]

/// What CepisMock's TLS front needs on the trait build: SwiftNIO and its TLS (already in
/// AsyncHTTPClient's closure), and swift-certificates to make a certificate authority and its
/// certificates at run time, so no key is ever committed. A default build resolves none of them.
/// valkey-swift, for builds with the `Valkey` trait only: the fleet's shared address cache.
let valkey: Target.Dependency = .product(
  name: "Valkey", package: "valkey-swift", condition: .when(traits: ["Valkey"]))

/// What the command line's `--cache redis://…` needs besides: a logger for the client, and TLS
/// settings for `rediss://`.
let valkeyForCommandLine: [Target.Dependency] = [
  valkey,
  .product(name: "Logging", package: "swift-log", condition: .when(traits: ["Valkey"])),
  .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .when(traits: ["Valkey"])),
]

let tlsForMock: [Target.Dependency] = [
  .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["AsyncHTTPClient"])),
  .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: ["AsyncHTTPClient"])),
  .product(
    name: "NIOSSL", package: "swift-nio-ssl", condition: .when(traits: ["AsyncHTTPClient"])),
  .product(
    name: "X509", package: "swift-certificates", condition: .when(traits: ["AsyncHTTPClient"])),
  .product(name: "Crypto", package: "swift-crypto", condition: .when(traits: ["AsyncHTTPClient"])),
  .product(
    name: "SwiftASN1", package: "swift-asn1", condition: .when(traits: ["AsyncHTTPClient"])),
]

let package = Package(
  name: "Cepis",
  // What `Scripts/check-availability` holds the code to (CI): every reference to a later API
  // sits under `@available` or `#available`. CepisUI's types need Observation (macOS 14,
  // iOS 17, tvOS 17, watchOS 10) and say so themselves.
  platforms: [.macOS(.v10_15), .iOS(.v13), .tvOS(.v13), .watchOS(.v6), .visionOS(.v1)],
  products: [
    .library(name: "Cepis", targets: ["Cepis"]),
    .library(name: "BrazilianDocuments", targets: ["BrazilianDocuments"]),
    .library(name: "CPFHub", targets: ["CPFHub"]),
    .library(name: "CepisUI", targets: ["CepisUI"]),
    .library(name: "CepisMock", targets: ["CepisMock"]),
    .executable(name: "cepis", targets: ["CepisCLI"]),
  ],
  traits: [
    .trait(
      name: "AsyncHTTPClient",
      description:
        "Adds Transport.asyncHTTPClient (swift-server/async-http-client on SwiftNIO) and makes it Transport.default."
    ),
    .trait(
      name: "Observability",
      description:
        "Logs (swift-log), metrics (swift-metrics) and spans (swift-distributed-tracing) for every call of Client and CPFClient."
    ),
    .trait(
      name: "Valkey",
      description:
        "Adds AddressCache.valkey: an address cache in a Valkey or Redis server, shared by a fleet (valkey-io/valkey-swift)."
    ),
  ],
  dependencies: [
    .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.33.0"),
    .package(url: "https://github.com/apple/swift-nio.git", from: "2.81.0"),
    .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.30.0"),
    .package(url: "https://github.com/apple/swift-log.git", from: "1.14.0"),
    .package(url: "https://github.com/apple/swift-metrics.git", from: "2.5.0"),
    .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.4.0"),
    .package(url: "https://github.com/apple/swift-certificates.git", from: "1.10.0"),
    .package(url: "https://github.com/apple/swift-crypto.git", "3.0.0"..<"5.0.0"),
    .package(url: "https://github.com/apple/swift-asn1.git", from: "1.3.0"),
    .package(url: "https://github.com/valkey-io/valkey-swift.git", from: "1.4.0"),
  ],
  targets: [
    // The retry/deadline/transport core shared by both API clients. Its public API is
    // `Transport` and `RetryBudget` only, which Cepis and CPFHub re-export; the rest is
    // `package`.
    .target(
      name: "CepisHTTP",
      dependencies: ["CepisSupport", asyncHTTPClient] + nioForTransport + observability
        + [
          // Reads a refused server certificate to say why it was refused (TLSDiagnosis).
          .product(
            name: "X509", package: "swift-certificates",
            condition: .when(traits: ["AsyncHTTPClient"]))
        ]),
    // One of each small tool the modules share (`package` access only, not a product): the lock
    // type and the CSV field writer.
    .target(name: "CepisSupport"),
    .target(
      name: "Cepis",
      dependencies: [
        "CepisHTTP", "CepisSupport", asyncHTTPClient, valkey,
        // A Valkey reply's values are read in place (in valkey-swift's closure already).
        .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Valkey"])),
      ] + observability),
    .target(name: "BrazilianDocuments"),
    .target(
      name: "CPFHub",
      dependencies: ["CepisHTTP", "BrazilianDocuments", asyncHTTPClient] + observability),
    // View models (Observation, tested on Linux) and SwiftUI views: the client modules never
    // import SwiftUI.
    .target(name: "CepisUI", dependencies: ["Cepis", "CPFHub", "BrazilianDocuments"]),
    // The loopback server never imports the clients: it must be able to catch their mistakes.
    // On the trait build it also serves its routes over TLS (`MockTLSServer`).
    .target(name: "CepisMock", dependencies: ["BrazilianDocuments", "CepisSupport"] + tlsForMock),
    // The command-line tool's logic lives in a library so its parser can be unit-tested;
    // the executable target is named `CepisCLI` (not `cepis`) so it cannot clash with the
    // `Cepis` module on case-insensitive file systems.
    .target(
      name: "CepisCommandLine",
      dependencies: ["Cepis", "CPFHub", "BrazilianDocuments", "CepisMock", "CepisSupport"]
        + valkeyForCommandLine
    ),
    .executableTarget(name: "CepisCLI", dependencies: ["CepisCommandLine"]),
    // Not a product: the benchmarks are this repository's tool, not something a package that
    // depends on Cepis should see.
    .executableTarget(
      name: "CepisBench",
      dependencies: [
        "Cepis", "CepisHTTP", "BrazilianDocuments", "CepisMock", "CepisCommandLine",
        asyncHTTPClient, valkey,
        .product(
          name: "NIOCore", package: "swift-nio", condition: .when(traits: ["AsyncHTTPClient"])),
      ] + observability + observabilityTestKits,
      path: "Benchmarks/CepisBench"
    ),
    // Not a product: the child process of the cache's multi-process and kill -9 tests, which
    // find it next to the test bundle (CepisTests depends on it so that `swift test` builds it).
    .executableTarget(
      name: "CepisCacheStress", dependencies: ["Cepis"], path: "Tests/CepisCacheStress"),
    // Not a product: what several test targets share (child processes started without
    // Foundation's `Process`, whose Linux `run()` can crash a test process with many
    // descriptors open; the transports a test parameterised over transports runs over; the
    // mock server, transport and CPF fixtures).
    .target(
      name: "CepisTestSupport",
      dependencies: ["CepisHTTP", "CepisSupport", "CepisMock", "BrazilianDocuments"]
        + observability + observabilityTestKits,
      path: "Tests/CepisTestSupport"),
    // The transport conformance suite runs against CepisMock over real sockets.
    .testTarget(
      name: "CepisHTTPTests",
      dependencies: [
        "CepisHTTP", "CepisMock", "CepisSupport", "CepisTestSupport", asyncHTTPClient,
        .product(
          name: "X509", package: "swift-certificates", condition: .when(traits: ["AsyncHTTPClient"])
        ),
      ]),
    .testTarget(
      name: "CepisTests",
      dependencies: [
        "Cepis", "CepisHTTP", "CepisSupport", "CepisMock", "BrazilianDocuments", asyncHTTPClient,
        "CepisCacheStress", "CepisTestSupport", valkey,
      ] + observability + observabilityTestKits),
    .testTarget(
      name: "BrazilianDocumentsTests", dependencies: ["BrazilianDocuments", "CepisTestSupport"]),
    .testTarget(
      name: "CPFHubTests",
      dependencies: [
        "CPFHub", "CepisHTTP", "CepisMock", "BrazilianDocuments", "CepisTestSupport",
        asyncHTTPClient,
      ] + observability + observabilityTestKits),
    .testTarget(
      name: "CepisUITests",
      dependencies: [
        "CepisUI", "Cepis", "CPFHub", "BrazilianDocuments", "CepisMock", "CepisSupport",
        "CepisTestSupport",
      ]),
    .testTarget(
      name: "CepisMockTests",
      dependencies: ["CepisMock", "BrazilianDocuments", "CepisSupport", "CepisTestSupport"]),
    // Both clients in one program, as a server app that uses both would have them; with
    // MemberImportVisibility (SE-0444) on, it also proves that `import Cepis` and `import CPFHub`
    // alone reach every member of the shared `Transport` and `RetryBudget`.
    .testTarget(
      name: "BothClientsTests",
      dependencies: ["Cepis", "CPFHub", "CepisMock", "CepisTestSupport"] + observability
        + observabilityTestKits,
      swiftSettings: [.enableUpcomingFeature("MemberImportVisibility")]),
    .testTarget(
      name: "CepisCLITests",
      dependencies: [
        "CepisCommandLine", "CepisMock", "Cepis", "CepisHTTP", "BrazilianDocuments",
        "CepisSupport", "CepisTestSupport",
      ]
    ),
  ]
)

// Each module folder under Sources/ has a README.md for its readers, not a resource.
for target in package.targets where target.type != .test && target.path == nil {
  target.exclude.append("README.md")
}

/// Every warning an error in our own targets, when `CEPIS_WARNINGS_AS_ERRORS=1` (`.ci/run` sets
/// it): in the manifest rather than `-Xswiftc -warnings-as-errors`, so that CI's `swift build`
/// and the README's `swift test` share one build instead of compiling everything twice.
/// SwiftPM ignores the setting when the package is someone's dependency.
let warningsAsErrors = Context.environment["CEPIS_WARNINGS_AS_ERRORS"] == "1"

// One strictness for every target: Swift 6 language mode.
for target in package.targets {
  var settings = target.swiftSettings ?? []
  settings.append(.swiftLanguageMode(.v6))
  if warningsAsErrors { settings.append(.treatAllWarnings(as: .error)) }
  target.swiftSettings = settings
}
