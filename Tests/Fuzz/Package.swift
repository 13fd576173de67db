// swift-tools-version:6.0
//
// ppc's libFuzzer harnesses: a package of their own, so the main build never needs libFuzzer. Each harness is an
// executable whose entry point is `LLVMFuzzerTestOneInput`; libFuzzer supplies `main`. Build and run them with
// `make fuzz` (long) or `make fuzz-smoke` (bounded, part of `make test`); see Tests/Fuzz/README.md.

import PackageDescription

/// Each harness and the front door it fuzzes.
let harnesses = [
    "FuzzWire",  // every link message, both directions: header, decode, the connection's receive paths
    "FuzzHost",  // the host's bulk channel: offers, chunks, clip_done in any order, sizes and names
    "FuzzManifest",  // manifest parsing and validation against the real plugin descriptors
    "FuzzIndex",  // index.bin snapshots and clip bundles read back
    "FuzzRing",  // ring scan and recovery on damaged ring.json, index.log and fragments
    "FuzzMedia",  // the WAV/media reader's front door (libavformat through Media), block by block and whole
    "FuzzMeta",  // a clip's meta.json and annotations.json as a host reads them: ranges, arithmetic, round trip
    "FuzzIMU",  // a recorded IMU log (file.imu): header, fields, units, times, rate — refused by line or read in range
]

let package = Package(
    name: "ppc-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "ppc", path: "../..")],
    targets: [.target(name: "FuzzDriver", path: "Sources/FuzzDriver")]
        + harnesses.map { name in
            .executableTarget(
                name: name, dependencies: ["FuzzDriver", .product(name: "PPCFuzzable", package: "ppc")],
                path: "Sources/\(name)")
        }
)
