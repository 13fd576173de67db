// swift-tools-version:6.2
//
// ppc — PinPoint Capture for Linux.
//
// Dependencies point one way: Tools and Plugins depend on Modules; a Module never depends on a Plugin or a Tool.
// Each C library is a `C<Name>` system-library target imported by exactly one Swift wrapper target.
// `scripts/check-architecture` (run by `make test`) reads `swift package dump-package` and enforces both rules.

import Foundation
import PackageDescription

/// The per-sample paths — the impact detector and the synthetic corpora that feed it — are compiled with -O in debug
/// builds too: the tests make RoomCorpus and ImpactCorpus sessions (a room's reverberation, sample by sample) and run
/// the detector over them, and the VM's microphone tests run a debug ppc-tool against a live sound card. Measured
/// 2026-12-02: the Detect suites 78 s of CPU → 10 s, the same decisions; a debug build's slowest 5 ms period with a
/// decision in it 5.6 ms → 2.1 ms (`bench detect`).
let optimisedEvenInDebug: [SwiftSetting] = [.unsafeFlags(["-O"], .when(configuration: .debug))]

let package = Package(
    name: "ppc",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "ppc-tool", targets: ["ppc-tool"]),
        .executable(name: "ppc-host", targets: ["ppc-host"]),
        /** What the libFuzzer harnesses in Tests/Fuzz (a package of their own, built with -sanitize=fuzzer,address)
            exercise: every parser of input from a socket, a file, a manifest or a disk. */
        .library(
            name: "PPCFuzzable",
            targets: [
                "Link", "Crypto", "Pairing", "Transfer", "Checksum", "Pipeline", "Config", "Syscall", "FragmentRing",
                "TimelineIndex", "PayloadSource", "Catalogue", "Media", "Synthetic", "Detectors", "FileSink",
                "LibavEncoder", "ZstdCodec", "MediaSource", "NetworkSink", "V4L2Source", "IMUFile",
            ]),
    ],
    targets: [
        // MARK: - C libraries (each imported by exactly one wrapper)

        /** libxxhash, found by pkg-config; wrapped by Checksum. */
        .systemLibrary(name: "CXXHash", path: "Modules/CXXHash", pkgConfig: "libxxhash"),
        /** XXH3-64 checksums: the only importer of CXXHash. */
        .target(name: "Checksum", dependencies: ["CXXHash"], path: "Modules/Checksum"),
        .testTarget(name: "ChecksumTests", dependencies: ["Checksum"], path: "Tests/ChecksumTests"),

        /** FFmpeg 5.1 (libavcodec, libavformat, libavfilter, libavutil, libswscale), found by pkg-config; wrapped by
            Media. */
        .systemLibrary(name: "CFFmpeg", path: "Modules/CFFmpeg", pkgConfig: "libavformat"),
        /** Encode to keyframe-aligned MPEG-TS fragments and remux clips to MP4: the only importer of CFFmpeg. */
        .target(name: "Media", dependencies: ["CFFmpeg"], path: "Modules/Media"),
        .testTarget(name: "MediaTests", dependencies: ["Media", "TestSupport"], path: "Tests/MediaTests"),

        /** cairo 1.16, found by pkg-config; wrapped by Raster. */
        .systemLibrary(name: "CCairo", path: "Modules/CCairo", pkgConfig: "cairo"),
        /** Antialiased 2D drawing (lines, arcs, text) into RGBA pictures: the only importer of CCairo. */
        .target(name: "Raster", dependencies: ["CCairo"], path: "Modules/Raster"),
        .testTarget(name: "RasterTests", dependencies: ["Raster"], path: "Tests/RasterTests"),

        /** libzstd, found by pkg-config; wrapped by Compression. */
        .systemLibrary(name: "CZstd", path: "Modules/CZstd", pkgConfig: "libzstd"),
        /** zstd compression with reused contexts: the only importer of CZstd. */
        .target(name: "Compression", dependencies: ["CZstd"], path: "Modules/Compression"),
        .testTarget(name: "CompressionTests", dependencies: ["Compression"], path: "Tests/CompressionTests"),

        /** The kernel's V4L2 user API (linux/videodev2.h, Debian's linux-libc-dev): ioctl request numbers and struct
            layouts checked at build time. No pkg-config: part of the kernel headers. Wrapped by V4L2. */
        .systemLibrary(name: "CV4L2", path: "Modules/CV4L2"),
        /** V4L2 capture: devices, capability cards, frame-rate-first mode selection, warm-once locks, mmap streaming.
            The only importer of CV4L2. */
        .target(name: "V4L2", dependencies: ["JSONInput", "CV4L2", "Syscall"], path: "Modules/V4L2"),
        .testTarget(
            name: "V4L2Tests", dependencies: ["V4L2", "V4L2Source", "Pipeline", "TestSupport"], path: "Tests/V4L2Tests"),

        /** libasound2 (Debian libasound2-dev), found by pkg-config: sound cards. Wrapped by ALSA. */
        .systemLibrary(name: "CALSA", path: "Modules/CALSA", pkgConfig: "alsa"),
        /** ALSA PCM capture and playback with monotonic timestamps, and the cards' capture devices: the only importer
            of CALSA. */
        .target(name: "ALSA", dependencies: ["CALSA"], path: "Modules/ALSA"),

        // MARK: - Syscall

        /** glibc's Linux-only calls (mallopt, gettid); part of libc, so no pkg-config and no link line. Wrapped by Syscall. */
        .systemLibrary(name: "CLinux", path: "Modules/CLinux"),
        /** System calls through one EINTR-retrying, errno-typing helper; file descriptors that close themselves. */
        .target(name: "Syscall", dependencies: ["CLinux"], path: "Modules/Syscall"),
        .testTarget(name: "SyscallTests", dependencies: ["Syscall"], path: "Tests/SyscallTests"),

        // MARK: - JSONInput

        /** JSON from outside (request bodies, files a device sent or a person edited): nesting bounded before Foundation parses. */
        .target(name: "JSONInput", path: "Modules/JSONInput"),
        .testTarget(name: "JSONInputTests", dependencies: ["JSONInput"], path: "Tests/JSONInputTests"),

        // MARK: - Admission

        /** Connections that have not said who they are, bounded per peer and overall (the oldest silent one makes room);
            lines about them throttled. Shared by the link's listener and the studio's front door. */
        .target(name: "Admission", dependencies: ["Syscall"], path: "Modules/Admission"),
        .testTarget(name: "AdmissionTests", dependencies: ["Admission", "Syscall"], path: "Tests/AdmissionTests"),

        // MARK: - Config

        /** Every parameter ppc is built with, each with its value, unit and provenance (measured/vendor/derived/assumed). */
        .target(name: "Config", dependencies: ["JSONInput", "Checksum", "Syscall"], path: "Modules/Config"),
        .testTarget(name: "ConfigTests", dependencies: ["Config"], path: "Tests/ConfigTests"),

        // MARK: - FragmentRing

        /** The last seconds on disk as a ring of encoded fragments, crash-safe, with pins and validated reads. */
        .target(
            name: "FragmentRing", dependencies: ["JSONInput", "Checksum", "Syscall"], path: "Modules/FragmentRing"),
        .testTarget(
            name: "FragmentRingTests", dependencies: ["TestSupport", "FragmentRing"], path: "Tests/FragmentRingTests"),

        // MARK: - TimelineIndex

        /** Every source's entries (fragments, audio windows, IMU, interruptions, candidates) on one time axis. */
        .target(name: "TimelineIndex", dependencies: ["Checksum", "Syscall"], path: "Modules/TimelineIndex"),
        .testTarget(
            name: "TimelineIndexTests", dependencies: ["TestSupport", "TimelineIndex"], path: "Tests/TimelineIndexTests"
        ),

        // MARK: - PayloadSource

        /** SwingWindow: a frozen time-range view over the live ring + index, or over a bundle read back. */
        .target(
            name: "PayloadSource", dependencies: ["JSONInput", "FragmentRing", "TimelineIndex", "Checksum", "Syscall"],
            path: "Modules/PayloadSource"),
        .testTarget(
            name: "PayloadSourceTests", dependencies: ["TestSupport", "PayloadSource", "Checksum"],
            path: "Tests/PayloadSourceTests"),

        // MARK: - Audio

        /** The last seconds of audio for candidate windows; WAV writing. */
        .target(name: "Audio", dependencies: ["Syscall"], path: "Modules/Audio"),

        // MARK: - Detect

        /** Streaming club–ball impact detection to the sample; scoring against truth. */
        .target(name: "Detect", path: "Modules/Detect", swiftSettings: optimisedEvenInDebug),
        .testTarget(
            name: "DetectTests", dependencies: ["Detect", "Synthetic", "TestSupport"], path: "Tests/DetectTests"),

        // MARK: - Capture

        /** Source → encoder → FragmentRing (+ TimelineIndex), and window → clip.mp4. */
        .target(
            name: "Capture",
            dependencies: [
                "Pipeline", "FragmentRing", "TimelineIndex", "PayloadSource", "Media", "Syscall", "Audio", "Checksum",
            ],
            path: "Modules/Capture"),
        .testTarget(
            name: "CaptureTests",
            dependencies: ["Capture", "Synthetic", "LibavEncoder", "ZstdCodec", "MediaSource", "TestSupport"],
            path: "Tests/CaptureTests"),

        // MARK: - Session

        /** One capture session: every stage composed on per-source threads, DetectAndMint, report and timeline. */
        .target(
            name: "Session",
            dependencies: [
                "JSONInput", "Pipeline", "Config", "FragmentRing", "TimelineIndex", "PayloadSource", "Capture", "Audio",
                "Checksum", "Syscall", "Policy",
            ],
            path: "Modules/Session"),
        .testTarget(
            name: "SessionTests",
            dependencies: [
                "Session", "Pipeline", "Config", "FragmentRing", "Synthetic", "LibavEncoder", "FileSink", "TestSupport",
            ],
            path: "Tests/SessionTests"),
        .testTarget(
            name: "AudioTests", dependencies: ["Audio", "ALSA", "ALSASource", "Pipeline", "Detect"],
            path: "Tests/AudioTests"),

        // MARK: - Measure

        /** Instruments' analysis: the shaft finder, the bitrate sweep's comparison and choice, their plot. */
        .target(name: "Measure", path: "Modules/Measure"),
        .testTarget(name: "MeasureTests", dependencies: ["Measure"], path: "Tests/MeasureTests"),

        // MARK: - Policy

        /** Thermal ladder with history, storage floor, memory budget: what yields (transfer, then minting; capture last). */
        .target(name: "Policy", dependencies: ["Syscall"], path: "Modules/Policy"),
        .testTarget(name: "PolicyTests", dependencies: ["Policy", "TestSupport"], path: "Tests/PolicyTests"),

        // MARK: - Link and Transfer

        /** libsodium (Debian libsodium-dev), found by pkg-config; wrapped by Crypto. */
        .systemLibrary(name: "CSodium", path: "Modules/CSodium", pkgConfig: "libsodium"),
        /** X25519, BLAKE2b, XChaCha20-Poly1305 (AEAD and secretstream), random bytes: the only importer of CSodium. */
        .target(name: "Crypto", dependencies: ["CSodium"], path: "Modules/Crypto"),
        .testTarget(name: "CryptoTests", dependencies: ["Crypto"], path: "Tests/CryptoTests"),
        /** The wire protocol (control and bulk channels), TCP connections, the encrypted link's handshake and records,
            and the clock relation. */
        .target(name: "Link", dependencies: ["Admission", "Syscall", "Crypto"], path: "Modules/Link"),
        /** libavahi-client (Debian libavahi-client-dev; headers in /usr/include, linked by the module map — its pkg-config
            cflags carry -D_REENTRANT, which SwiftPM refuses); wrapped by Discovery. */
        .systemLibrary(name: "CAvahi", path: "Modules/CAvahi"),
        /** DNS-SD over mDNS through avahi-daemon: a device advertises `_ppc._tcp`, a host browses. The only importer of
            CAvahi. */
        .target(name: "Discovery", dependencies: ["CAvahi"], path: "Modules/Discovery"),
        .testTarget(name: "DiscoveryTests", dependencies: ["Discovery"], path: "Tests/DiscoveryTests"),
        /** SQLite 3 (Debian libsqlite3-dev), found by pkg-config; wrapped by Catalogue. */
        .systemLibrary(name: "CSQLite", path: "Modules/CSQLite", pkgConfig: "sqlite3"),
        /** libcivetweb (Debian ships no .pc file: linked by name); wrapped by WebServer. */
        .systemLibrary(name: "CCivetweb", path: "Modules/CCivetweb", providers: [.apt(["libcivetweb-dev"])]),
        /** HTTP with Range and WebSocket over civetweb's thread pool: the only importer of CCivetweb. */
        .target(name: "WebServer", dependencies: ["Admission", "CCivetweb", "Syscall"], path: "Modules/WebServer"),
        /** ppc Studio: the host's web pages (plain files in web/) and the JSON API over the catalogue and the library. */
        .target(
            name: "Studio",
            dependencies: [
                "JSONInput", "Library", "WebServer", "Catalogue", "PayloadSource", "Media", "Raster", "Crypto",
                "Syscall",
            ], path: "Modules/Studio", resources: [.copy("web")]),
        .testTarget(
            name: "WebServerTests", dependencies: ["WebServer", "Syscall", "TestSupport"], path: "Tests/WebServerTests"),
        .testTarget(
            name: "StudioTests", dependencies: ["Studio", "WebServer", "Catalogue", "Media", "Syscall", "TestSupport"],
            path: "Tests/StudioTests"),
        /** The host's clip catalogue on SQLite: clips, files, swings across devices; the only importer of CSQLite. */
        .target(name: "Catalogue", dependencies: ["JSONInput", "CSQLite", "Syscall"], path: "Modules/Catalogue"),
        /** libpq (Debian libpq-dev), found by pkg-config; wrapped by PostgresCatalogue. */
        .systemLibrary(name: "CPostgres", path: "Modules/CPostgres", pkgConfig: "libpq"),
        /** The clip catalogue on PostgreSQL, for a facility whose hosts share one: the only importer of CPostgres. */
        .target(
            name: "PostgresCatalogue", dependencies: ["CPostgres", "Catalogue"], path: "Modules/PostgresCatalogue"),
        .testTarget(
            name: "CatalogueTests", dependencies: ["Catalogue", "PostgresCatalogue", "Syscall", "TestSupport"],
            path: "Tests/CatalogueTests"),
        /** The host's library: clip folders as catalogue entries, placed in swings once and kept (swing.json), caught up
            after the host or its catalogue was away; bays. */
        .target(
            name: "Library", dependencies: ["Catalogue", "PayloadSource", "JSONInput", "Syscall"],
            path: "Modules/Library"),
        .testTarget(
            name: "LibraryTests", dependencies: ["Library", "Catalogue", "PayloadSource", "Syscall", "TestSupport"],
            path: "Tests/LibraryTests"),
        /** Pairing: long-term identities, the pinned peers, and the code-confirmed pairing exchange. */
        .target(
            name: "Pairing", dependencies: ["Admission", "JSONInput", "Crypto", "Link", "Syscall"],
            path: "Modules/Pairing"),
        .testTarget(
            name: "PairingTests", dependencies: ["Pairing", "Link", "Crypto", "TestSupport"], path: "Tests/PairingTests"
        ),
        /** Resumable, verified clip transfer: the host's store and server, the device's sender. */
        .target(
            name: "Transfer", dependencies: ["Admission", "Link", "Checksum", "Compression", "Syscall"],
            path: "Modules/Transfer"),
        .testTarget(
            name: "LinkTests", dependencies: ["Link", "TestSupport", "Syscall", "Synthetic", "Crypto"],
            path: "Tests/LinkTests"),
        .testTarget(
            name: "TransferTests", dependencies: ["Link", "Transfer", "TestSupport", "Checksum", "Syscall", "Crypto"],
            path: "Tests/TransferTests"),

        // MARK: - Pipeline

        /** The plugin registry and the JSON manifest that composes plugins into a pipeline. */
        .target(name: "Pipeline", dependencies: ["Config", "FragmentRing", "Syscall"], path: "Modules/Pipeline"),
        .testTarget(
            name: "PipelineTests", dependencies: ["Pipeline", "IMUFile", "TestSupport"], path: "Tests/PipelineTests"),

        // MARK: - CLI

        /** The one hand-written command-line parser and the exit-code convention shared by ppc-tool and ppc-host. */
        .target(name: "CLI", dependencies: ["Syscall"], path: "Modules/CLI"),
        .testTarget(name: "CLITests", dependencies: ["CLI", "Syscall"], path: "Tests/CLITests"),

        // MARK: - Plugins

        /** Synthetic video (NV12, or Motion JPEG prepared before arming), audio and IMU sources drawn from one known
            swing script: the built-in test session. */
        .target(
            name: "Synthetic", dependencies: ["Pipeline", "Config", "Syscall", "Media"], path: "Plugins/Synthetic",
            swiftSettings: optimisedEvenInDebug),
        .testTarget(name: "SyntheticTests", dependencies: ["Synthetic"], path: "Tests/SyntheticTests"),

        // MARK: - Test support and Specs

        /** Helpers shared by test targets and Specs (temporary directories, deterministic fragments). */
        .target(name: "TestSupport", dependencies: ["FragmentRing", "Syscall"], path: "Tests/TestSupport"),
        /** Executable specifications: the buffer tests seed 000 asks to port, and crash safety. */
        .testTarget(
            name: "Specs",
            dependencies: [
                "FragmentRing", "TimelineIndex", "PayloadSource", "TestSupport", "Syscall", "Synthetic", "ppc-tool",
            ],
            path: "Specs"),

        /** x264 and x265 encoder plugins over Media: keyframe-aligned MPEG-TS fragments. */
        .target(
            name: "LibavEncoder", dependencies: ["Media", "Pipeline", "Config", "FragmentRing"],
            path: "Plugins/LibavEncoder"),

        /** `file` and `network` sources: video and audio from anything libavformat opens. */
        .target(name: "MediaSource", dependencies: ["Media", "Pipeline", "Config"], path: "Plugins/MediaSource"),
        /** The `file` clip sink: bundles written atomically under DIR/clips/<clipId>/. */
        .target(name: "FileSink", dependencies: ["Pipeline", "Config", "Syscall"], path: "Plugins/FileSink"),
        /** The `impact` detector stage over Modules/Detect. */
        .target(name: "Detectors", dependencies: ["Detect", "Pipeline", "Config"], path: "Plugins/Detectors"),
        /** The `network` sink: events on control, clips on bulk to a ppc-host. */
        .target(
            name: "NetworkSink",
            dependencies: ["Link", "Transfer", "Pipeline", "Config", "Syscall", "Pairing", "PayloadSource"],
            path: "Plugins/NetworkSink"),
        /** The `v4l2` video source: a camera through Modules/V4L2, NV12 as is or YUYV converted once, losses as interruptions. */
        .target(
            name: "V4L2Source", dependencies: ["V4L2", "Pipeline", "Config", "Syscall"], path: "Plugins/V4L2Source"),
        /** The `alsa` audio source: a microphone through Modules/ALSA, its sample clock fitted against CLOCK_MONOTONIC. */
        .target(
            name: "ALSASource", dependencies: ["ALSA", "Audio", "Pipeline", "Config", "Syscall"],
            path: "Plugins/ALSASource"),
        /** The `file.imu` source: a recorded IMU (CoreMotion's, a phone's, a sensor board's) as comma-separated samples, streamed. */
        .target(name: "IMUFile", dependencies: ["Pipeline", "Syscall"], path: "Plugins/IMUFile"),
        /** The lossless zstd fragment codec plugin (NV12 frames, each fragment independent). */
        .target(
            name: "ZstdCodec", dependencies: ["Compression", "Pipeline", "Config", "FragmentRing"],
            path: "Plugins/ZstdCodec"),

        // MARK: - Tools

        /** The benchmarks `ppc-tool bench` fronts: figures measured against a named baseline (apart from the tool's
            commands, as swift-nio keeps its Benchmarks/). */
        .target(
            name: "Benchmarks",
            dependencies: [
                "JSONInput",
                "CLI", "Config", "Pipeline", "Synthetic", "LibavEncoder", "Capture", "FragmentRing", "TimelineIndex",
                "Syscall",
                "Checksum", "Media", "Detect", "Audio", "Link", "Transfer", "Studio", "Catalogue", "PayloadSource",
            ],
            path: "Tools/Benchmarks"),
        /** `ppc-tool`: one subcommand per module, plus `run`. */
        .executableTarget(
            name: "ppc-tool",
            dependencies: [
                "JSONInput",
                "Benchmarks",
                "Config", "Pipeline", "CLI", "Synthetic", "LibavEncoder", "Capture", "FragmentRing", "TimelineIndex",
                "PayloadSource", "Syscall", "Checksum", "Media", "ZstdCodec", "MediaSource", "FileSink", "Detectors",
                "Detect",
                "Session", "Audio", "NetworkSink", "Link", "Transfer", "V4L2", "V4L2Source", "ALSA", "ALSASource",
                "IMUFile", "Pairing", "Discovery", "Measure", "Policy",
            ],
            path: "Tools/ppc-tool"),
        /** `ppc-host`: receives clips from many devices. */
        /** A host, composed: link server, catalogue, viewing copies, bays and the studio, wired (ppc-host's core). */
        .target(
            name: "HostService",
            dependencies: [
                "Admission", "Catalogue", "Library", "Link", "Media", "PayloadSource", "PostgresCatalogue", "Studio",
                "Syscall", "Transfer", "WebServer",
            ], path: "Modules/HostService"),
        .executableTarget(
            name: "ppc-host",
            dependencies: [
                "Library", "Admission", "JSONInput", "CLI", "Link", "Transfer", "Syscall", "Media", "Pairing", "Crypto",
                "Discovery", "Catalogue", "PostgresCatalogue", "PayloadSource", "Studio", "WebServer", "HostService",
            ], path: "Tools/ppc-host"),
        /** End-to-end tests that run the built binaries and check exit codes and output. */
        .testTarget(
            name: "ToolTests",
            dependencies: [
                "ppc-tool", "ppc-host", "TestSupport", "FragmentRing", "TimelineIndex", "Synthetic", "Checksum",
                "Syscall", "PayloadSource", "Session", "Catalogue",
            ],
            path: "Tests/ToolTests"),
    ]
)

// Each module, plugin and tool keeps a README.md beside its sources (what it does, its invariants, its figures); it is
// documentation, not a resource, so it is excluded from its target and the build stays quiet enough for a real warning
// to be seen.
for target in package.targets where target.type != .system {
    guard let path = target.path,
        FileManager.default.fileExists(atPath: "\(Context.packageDirectory)/\(path)/README.md")
    else { continue }
    target.exclude.append("README.md")
}

// ppc's own code builds with warnings as errors: a warning is fixed when it appears, not when it is one of many.
for target in package.targets where target.type != .system {
    target.swiftSettings = (target.swiftSettings ?? []) + [.treatAllWarnings(as: .error)]
}
