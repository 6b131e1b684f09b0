// swift-tools-version:6.0
// libFuzzer targets for every pushworker parser of untrusted bytes (docs/testing.md). A separate package, so
// that building pushworker itself never needs the fuzzer runtime. Build one target with
//   swift build --product FuzzPayloadValidator -Xswiftc -sanitize=fuzzer,address
// (only the product, so nothing else is instrumented), or build and run them all with `./run.sh`.
import PackageDescription

let core = Target.Dependency.product(name: "PushWorkerCore", package: "pushworker")

let package = Package(
    name: "pushworker-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "pushworker", path: ".."),
    ],
    targets: [
        // libFuzzer's driver entry point and the invariant check shared by the targets.
        .target(name: "FuzzSupport"),
        // cJSON (Debian `libcjson-dev`) as the validator's reference parser, behind a tiny C function so
        // that its header is not a second Clang module next to pushworker's own CCJSON.
        .target(name: "CJSONReference", linkerSettings: [.linkedLibrary("cjson")]),
        .executableTarget(name: "FuzzPayloadValidator", dependencies: ["FuzzSupport", "CJSONReference", core]),
        .executableTarget(name: "FuzzAPNsExpiration", dependencies: ["FuzzSupport", core]),
        .executableTarget(name: "FuzzTraceContext", dependencies: ["FuzzSupport", core]),
        .executableTarget(name: "FuzzExecOutcome", dependencies: ["FuzzSupport", core]),
        .executableTarget(name: "FuzzHTTPOutcome", dependencies: ["FuzzSupport", core]),
        .executableTarget(name: "FuzzCrashGuardMarker", dependencies: ["FuzzSupport", core]),
        .executableTarget(name: "FuzzConfiguration", dependencies: [
            "FuzzSupport", .product(name: "PushWorker", package: "pushworker"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
