// swift-tools-version:6.0
//
// ppc — PinPoint Capture for Linux.
//
// Dependencies point one way: Tools and Plugins depend on Modules; a Module never depends on a Plugin or a Tool.
// Each C library is a `C<Name>` system-library target imported by exactly one Swift wrapper target.
// `scripts/check-architecture` (run by `make test`) reads `swift package dump-package` and enforces both rules.

import PackageDescription

let package = Package(
    name: "ppc",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "ppc-tool", targets: ["ppc-tool"])
    ],
    targets: [
        // MARK: - Config

        /** Every parameter ppc is built with, each with its value, unit and provenance (measured/vendor/derived/assumed). */
        .target(name: "Config", path: "Modules/Config"),
        .testTarget(name: "ConfigTests", dependencies: ["Config"], path: "Tests/ConfigTests"),

        // MARK: - Pipeline

        /** The plugin registry and the JSON manifest that composes plugins into a pipeline. */
        .target(name: "Pipeline", dependencies: ["Config"], path: "Modules/Pipeline"),
        .testTarget(name: "PipelineTests", dependencies: ["Pipeline"], path: "Tests/PipelineTests"),

        // MARK: - CLI

        /** The one hand-written command-line parser and the exit-code convention shared by ppc-tool and ppc-host. */
        .target(name: "CLI", path: "Modules/CLI"),
        .testTarget(name: "CLITests", dependencies: ["CLI"], path: "Tests/CLITests"),

        // MARK: - Plugins

        /** Synthetic video, audio and IMU sources drawn from one known swing script: the built-in test session. */
        .target(name: "Synthetic", dependencies: ["Pipeline", "Config"], path: "Plugins/Synthetic"),
        .testTarget(name: "SyntheticTests", dependencies: ["Synthetic"], path: "Tests/SyntheticTests"),

        // MARK: - Tools

        /** `ppc-tool`: one subcommand per module, plus `run`. */
        .executableTarget(name: "ppc-tool", dependencies: ["Config", "Pipeline", "CLI", "Synthetic"], path: "Tools/ppc-tool"),
        /** End-to-end tests that run the built binaries and check exit codes and output. */
        .testTarget(name: "ToolTests", dependencies: ["ppc-tool"], path: "Tests/ToolTests"),
    ]
)
