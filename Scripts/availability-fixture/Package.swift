// swift-tools-version:6.2
// The fixture of `Scripts/check-availability --self-test`: `Violations` holds references a
// Mac, an iPhone or a watch at these minimums would reject, each marked `// expect: NAME` on
// its line; `Guarded` holds the same code correctly guarded, and code that looks late but is
// not. The check must report exactly the marked lines.
import PackageDescription

let package = Package(
  name: "AvailabilityFixture",
  platforms: [.macOS(.v10_15), .iOS(.v13), .tvOS(.v13), .watchOS(.v6), .visionOS(.v1)],
  targets: [
    .target(name: "Violations"),
    .target(name: "Guarded"),
  ]
)
