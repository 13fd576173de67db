/// Every parameter ppc is built with — seed 000's list "What the build should be parametrised with", its §4
/// arithmetic, and the few Linux-side figures the port needs — in resolution order (a derived parameter follows its
/// inputs).
///
/// Marks follow seed 000: most are `assumed`. Nothing here is `measured`: no figure in this catalogue has been
/// measured on ppc's own hardware yet, and a `measured` mark needs a ``MeasurementRecord``.
public enum Catalog {
    static let nsPerSecond = 1_000_000_000.0

    public static let definitions: [ParameterDefinition] = capture + session + detect + link + host + device + policy

    // MARK: capture.*

    static let capture: [ParameterDefinition] = [
        .init(
            "capture.videoBitrateBps", .integer, unit: "bit/s", .given(.integer(50_000_000), .assumed),
            note: "⚠ Load-bearing and unmeasured: the E-M2 bitrate sweep against shaft-detection RMSE sets it.",
            constraints: [.range(100_000, 2_000_000_000)]),
        .init(
            "capture.fragmentSeconds", .real, unit: "s", .given(.real(0.5), .assumed),
            note: "GOP = fragment: an IDR at every boundary (REQ-BUF-1/2). Not a bitrate knob.",
            constraints: [.range(0.01, 10)]),
        .init(
            "capture.fragmentCapacity", .integer, unit: "fragments", .given(.integer(20), .assumed),
            note: "REQ-BUF-1 \"~20 fragments\".", constraints: [.range(2, 10_000)]),
        .init(
            "capture.expectedFrameRate", .integer, unit: "fps", .given(.integer(120), .assumed),
            note:
                "⛔ Set explicitly from the active format at arm, never left implicit (an implicit rate cost a third of the frames on iOS). 120 is the studio floor, used until a format is chosen.",
            constraints: [.range(1, 1000)]),
        .init(
            "capture.clipPreNs", .integer, unit: "ns", .given(.integer(1_500_000_000), .assumed),
            note: "Pre-roll before t0 (DetectAndMint.Configuration).", constraints: [.range(0, 600_000_000_000)]),
        .init(
            "capture.clipPostNs", .integer, unit: "ns", .given(.integer(3_000_000_000), .assumed),
            note: "⚠ Post-roll after t0. With clipPreNs the window is 4.5 s, which disagrees with PRD §16.2's 3 s.",
            constraints: [.range(1, 600_000_000_000)]),
        .init(
            "capture.sealPostRollEarly", .boolean, unit: "", .given(.boolean(true), .assumed),
            note:
                "A shot's post-roll end opens a fragment (an extra IDR, the grid counted on from there), so its clip is minted once the post-roll is captured, not up to a fragment later. One fragment per shot is shorter than capture.fragmentSeconds, and the ring's window by as much while it holds that fragment. false: the grid alone."
        ),
        .init(
            "capture.allowFrameReordering", .boolean, unit: "", .given(.boolean(false), .vendor(source: "seed 000 §3")),
            note: "⛔ No B-frames: reordering adds delay and breaks frame-accurate extraction from the ring.",
            constraints: [.hardLimit(.boolean(false), reason: "seed 000: no B-frames, no reordering")]),
        .init(
            "capture.realTime", .boolean, unit: "", .given(.boolean(true), .vendor(source: "seed 000 §3")),
            note: "Real-time / zero-latency encoder tuning.",
            constraints: [.hardLimit(.boolean(true), reason: "seed 000: the encoder runs real-time")]),
        .init(
            "capture.frameStartToExposureOffsetNs", .integer, unit: "ns", .given(.integer(0), .assumed),
            note: "⚠ No device has been through an LED rig (E-M1). Applied to every frame timestamp.",
            constraints: [.range(-1_000_000_000, 1_000_000_000)]),
        .init(
            "capture.rollingShutterReadoutFrames", .real, unit: "frame intervals", .given(.real(1.0), .assumed),
            note: "⚠ Placeholder: real values differ per sensor and binning mode.", constraints: [.range(0, 100)]),
        .init(
            "capture.ringSeconds", .real, unit: "s",
            .derived(
                .init(
                    "capture.fragmentSeconds × capture.fragmentCapacity",
                    inputs: ["capture.fragmentSeconds", "capture.fragmentCapacity"]
                ) {
                    .real($0.real("capture.fragmentSeconds") * $0.real("capture.fragmentCapacity"))
                }),
            note:
                "The retained window, at most: while the ring holds a fragment cut short at a shot's post-roll end (capture.sealPostRollEarly), less by up to a fragment for each."
        ),
        .init(
            "capture.fragmentNs", .integer, unit: "ns",
            .derived(
                .init("capture.fragmentSeconds × 1e9", inputs: ["capture.fragmentSeconds"]) {
                    .integer(Int64(($0.real("capture.fragmentSeconds") * nsPerSecond).rounded()))
                }),
            note: "One fragment's duration on the capture clock."),
        .init(
            "capture.framesPerFragment", .real, unit: "frames",
            .derived(
                .init(
                    "capture.fragmentSeconds × capture.expectedFrameRate",
                    inputs: ["capture.fragmentSeconds", "capture.expectedFrameRate"]
                ) {
                    .real($0.real("capture.fragmentSeconds") * $0.real("capture.expectedFrameRate"))
                }),
            note: "GOP length; must be a whole number of frames."),
        .init(
            "capture.ringFootprintBytes", .integer, unit: "bytes",
            .derived(
                .init(
                    "capture.ringSeconds × capture.videoBitrateBps / 8",
                    inputs: ["capture.ringSeconds", "capture.videoBitrateBps"]
                ) {
                    .integer(Int64(($0.real("capture.ringSeconds") * $0.real("capture.videoBitrateBps") / 8).rounded()))
                }),
            note: "Disk the ring occupies at the operating bitrate (seed 000 §4: ≈62 MB)."),
        .init(
            "capture.clipWindowNs", .integer, unit: "ns",
            .derived(
                .init("capture.clipPreNs + capture.clipPostNs", inputs: ["capture.clipPreNs", "capture.clipPostNs"]) {
                    .integer($0.integer("capture.clipPreNs") + $0.integer("capture.clipPostNs"))
                }),
            note: "The clip window around t0."),
        .init(
            "capture.clipBytes", .integer, unit: "bytes",
            .derived(
                .init(
                    "capture.clipWindowNs / 1e9 × capture.videoBitrateBps / 8",
                    inputs: ["capture.clipWindowNs", "capture.videoBitrateBps"]
                ) {
                    .integer(
                        Int64(
                            ($0.real("capture.clipWindowNs") / nsPerSecond * $0.real("capture.videoBitrateBps") / 8)
                                .rounded()))
                }),
            note: "One clip at the operating bitrate (seed 000 §4: ≈28 MB)."),
    ]

    // MARK: session.*

    static let session: [ParameterDefinition] = [
        .init(
            "session.shots", .integer, unit: "shots",
            .given(.integer(50), .vendor(source: "PRD §16.2 via seed 000 §4")),
            note: "Shots in a typical session.", constraints: [.range(1, 10_000_000)]),
        .init(
            "session.prdClipSeconds", .real, unit: "s",
            .given(.real(3.0), .vendor(source: "PRD §16.2 via seed 000 §4")),
            note: "⚠ The clip length the PRD's volume figure assumes; the real window is capture.clipWindowNs.",
            constraints: [.range(0, 600)]),
        .init(
            "session.volumeSeconds", .real, unit: "s",
            .derived(
                .init("session.shots × capture.clipWindowNs / 1e9", inputs: ["session.shots", "capture.clipWindowNs"]) {
                    .real($0.real("session.shots") * $0.real("capture.clipWindowNs") / nsPerSecond)
                }),
            note: "Video one session keeps, with the real clip window (seed 000 §4: ≈225 s)."),
        .init(
            "session.volumeBytes", .integer, unit: "bytes",
            .derived(
                .init(
                    "session.volumeSeconds × capture.videoBitrateBps / 8",
                    inputs: ["session.volumeSeconds", "capture.videoBitrateBps"]
                ) {
                    .integer(
                        Int64(($0.real("session.volumeSeconds") * $0.real("capture.videoBitrateBps") / 8).rounded()))
                }),
            note: "One session's clips on disk (seed 000 §4: ≈1.4 GB)."),
        .init(
            "session.prdVolumeBytes", .integer, unit: "bytes",
            .derived(
                .init(
                    "session.shots × session.prdClipSeconds × capture.videoBitrateBps / 8",
                    inputs: ["session.shots", "session.prdClipSeconds", "capture.videoBitrateBps"]
                ) {
                    .integer(
                        Int64(
                            ($0.real("session.shots") * $0.real("session.prdClipSeconds")
                                * $0.real("capture.videoBitrateBps") / 8).rounded()))
                }),
            note: "⚠ The PRD's figure (≈940 MB), kept only to show the disagreement."),
    ]

    // MARK: detect.*

    static let detect: [ParameterDefinition] = [
        .init(
            "detect.sampleRateHz", .integer, unit: "Hz", .given(.integer(48_000), .assumed),
            note: "Audio sample rate; other rates are handled explicitly.", constraints: [.range(8000, 384_000)]),
        .init(
            "detect.audioWindowNs", .integer, unit: "ns", .given(.integer(2_000_000_000), .assumed),
            note: "Audio kept with each candidate.", constraints: [.range(1, 600_000_000_000)]),
        .init(
            "detect.audioPreNs", .integer, unit: "ns", .given(.integer(1_000_000_000), .assumed),
            note: "Pre-roll of the candidate's audio window.", constraints: [.range(0, 600_000_000_000)]),
        .init(
            "detect.maxRetainedCandidates", .integer, unit: "candidates", .given(.integer(150), .assumed),
            note: "⛔ Enforced by eviction; retention is bounded in candidates, not shots (REQ-PRIV-6).",
            constraints: [.range(1, 100_000)]),
        .init(
            "detect.micToBallDefaultMetres", .real, unit: "m", .given(.real(1.5), .assumed),
            note: "⚠ Provenance: estimated. Nobody has surveyed a mic-to-ball distance (E-M5).",
            constraints: [.range(0, 100)]),
        .init(
            "detect.airTemperatureC", .real, unit: "°C", .given(.real(20.0), .assumed),
            note: "Air temperature for the speed of sound.", constraints: [.range(-40, 60)]),
        .init(
            "detect.imuRateHz", .integer, unit: "Hz", .given(.integer(100), .assumed),
            note: "IMU sample rate; 200 Hz is reachable on modern hardware.", constraints: [.range(1, 100_000)]),
        .init(
            "detect.speedOfSoundMps", .real, unit: "m/s",
            .derived(
                .init("331.3 + 0.606 × detect.airTemperatureC", inputs: ["detect.airTemperatureC"]) {
                    .real(331.3 + 0.606 * $0.real("detect.airTemperatureC"))
                }),
            note: "Speed of sound in dry air (linear approximation)."),
        .init(
            "detect.tofCorrectionSamples", .real, unit: "samples",
            .derived(
                .init(
                    "detect.micToBallDefaultMetres / detect.speedOfSoundMps × detect.sampleRateHz",
                    inputs: ["detect.micToBallDefaultMetres", "detect.speedOfSoundMps", "detect.sampleRateHz"]
                ) {
                    .real(
                        $0.real("detect.micToBallDefaultMetres") / $0.real("detect.speedOfSoundMps")
                            * $0.real("detect.sampleRateHz"))
                }),
            note: "Time of flight from ball to microphone, subtracted from the onset."),
        .init(
            "detect.audioRetentionBoundSeconds", .real, unit: "s",
            .derived(
                .init(
                    "detect.maxRetainedCandidates × detect.audioWindowNs / 1e9",
                    inputs: ["detect.maxRetainedCandidates", "detect.audioWindowNs"]
                ) {
                    .real($0.real("detect.maxRetainedCandidates") * $0.real("detect.audioWindowNs") / nsPerSecond)
                }),
            note: "Most audio a session retains (seed 000: ≈300 s)."),
    ]

    // MARK: link.*

    static let link: [ParameterDefinition] = [
        .init(
            "link.heartbeatHz", .real, unit: "Hz", .given(.real(1), .vendor(source: "CORE 7.4a via seed 000")),
            note: "Heartbeats per second on the control channel.", constraints: [.range(0.01, 1000)]),
        .init(
            "link.pumpTickIntervalNs", .integer, unit: "ns", .given(.integer(100_000_000), .assumed),
            note: "How often the transfer queue pumps.", constraints: [.range(1_000_000, 60_000_000_000)]),
        .init(
            "link.owedRetryIntervalNs", .integer, unit: "ns", .given(.integer(30_000_000_000), .assumed),
            note:
                "While a session owes clips to a host that was down, how often it tries to send them again without a new shot (each try costs one connection attempt).",
            constraints: [.range(100_000_000, 3_600_000_000_000)]),
        .init(
            "link.connectTimeoutNs", .integer, unit: "ns", .given(.integer(3_000_000_000), .assumed),
            note:
                "How long a device waits for a host to answer a connection before it counts the host as unreachable (a host asleep, or a firewall that drops, never answers; the kernel alone would wait about two minutes). Allows one SYN retransmission (1 s).",
            constraints: [.range(10_000_000, 600_000_000_000)]),
        .init(
            "link.syncBurstTarget", .integer, unit: "probes", .given(.integer(16), .assumed),
            note: "⚠ The iOS app's UI strings say \"twenty\"; ppc derives every text from this value.",
            constraints: [.range(1, 10_000)]),
        .init(
            "link.controlCeilingBytesPerSec", .integer, unit: "bytes/s", .given(.integer(10_000), .assumed),
            note: "A budget, not a measurement: only the idle path has been measured.",
            constraints: [.range(1, 1_000_000_000_000)]),
        .init(
            "link.concurrentPayloadTransfers", .integer, unit: "transfers", .given(.integer(1), .assumed),
            note: "⛔ Hard limit: parallel uploads contend with the ring for no throughput on one link.",
            constraints: [.hardLimit(.integer(1), reason: "seed 000: one concurrent payload transfer")]),
        .init(
            "link.payloadPumpBudgetBytes", .integer, unit: "bytes", .given(.integer(4_194_304), .assumed),
            note: "Bytes the transfer queue may send per pump tick.", constraints: [.range(1, 17_179_869_184)]),
        .init(
            "link.heartbeatIntervalNs", .integer, unit: "ns",
            .derived(
                .init("1e9 / link.heartbeatHz", inputs: ["link.heartbeatHz"]) {
                    .integer(Int64((nsPerSecond / $0.real("link.heartbeatHz")).rounded()))
                }),
            note: "Time between heartbeats."),
        .init(
            "link.deadPeerTimeoutNs", .integer, unit: "ns",
            .derived(
                .init("3 × link.heartbeatIntervalNs", inputs: ["link.heartbeatIntervalNs"]) {
                    .integer(3 * $0.integer("link.heartbeatIntervalNs"))
                }),
            note: "A peer is dead after three missed heartbeats."),
    ]

    // MARK: host.*

    static let host: [ParameterDefinition] = [
        .init(
            "host.ingestMinimumHeight", .integer, unit: "lines",
            .given(.integer(1080), .vendor(source: "PinPointStudio ingest policy (seed 000)")),
            note: "Host policy, not protocol: never crosses the wire (REQ-CAP-5).", constraints: [.range(1, 100_000)]),
        .init(
            "host.ingestMinimumFPS", .integer, unit: "fps",
            .given(.integer(120), .vendor(source: "PinPointStudio ingest policy (seed 000)")),
            note: "⛔ REQ-CAP-5: never encoded on the wire.", constraints: [.range(1, 100_000)]),
    ]

    // MARK: device.*

    static let device: [ParameterDefinition] = [
        .init(
            "device.settleEstimateMs", .integer, unit: "ms", .given(.integer(1200), .assumed),
            note: "⚠ No rig has measured this.", constraints: [.range(0, 600_000)]),
        .init(
            "device.storageFloorBytes", .integer, unit: "bytes",
            .derived(
                .init(
                    "session.volumeBytes + capture.ringFootprintBytes",
                    inputs: ["session.volumeBytes", "capture.ringFootprintBytes"]
                ) {
                    .integer($0.integer("session.volumeBytes") + $0.integer("capture.ringFootprintBytes"))
                }),
            note:
                "⚠ Proposed: REQ-OFF-2 has no value. One session plus the ring as headroom (seed 000: ≈1.4 GB). Refuse to arm below it."
        ),
    ]

    // MARK: policy.*

    static let policy: [ParameterDefinition] = [
        .init(
            "policy.sampleHz", .real, unit: "Hz",
            .given(.real(1), .vendor(source: "seed 000: thermal state polled at 1 Hz")),
            note: "How often Policy reads thermal zones, free space and memory.", constraints: [.range(0.01, 1000)]),
        .init(
            "policy.thermalHistoryWindow", .integer, unit: "readings",
            .given(.integer(5), .vendor(source: "seed 001 ThermalManager")),
            note: "Readings the thermal ladder remembers, so a transient spike does not count as persistent heat.",
            constraints: [.range(1, 100_000)]),
        .init(
            "policy.persistentSeriousReadings", .integer, unit: "readings",
            .given(.integer(3), .vendor(source: "seed 001 ThermalManager")),
            note: "Serious-or-worse readings within the window that make heat persistent: minting then waits too.",
            constraints: [.range(1, 100_000)]),
        .init(
            "policy.fairCelsius", .real, unit: "°C", .given(.real(70), .assumed),
            note: "Fair above this, for thermal zones that publish no passive trip point.",
            constraints: [.range(1, 200)]),
        .init(
            "policy.seriousCelsius", .real, unit: "°C", .given(.real(85), .assumed),
            note: "Serious above this, for zones without a passive trip point.", constraints: [.range(1, 200)]),
        .init(
            "policy.criticalCelsius", .real, unit: "°C", .given(.real(95), .assumed),
            note: "Critical above this, for zones without a hot or critical trip point.", constraints: [.range(1, 200)]),
        .init(
            "policy.memoryBudgetBytes", .integer, unit: "bytes", .given(.integer(1 << 30), .assumed),
            note:
                "Resident memory above this raises a memory warning (the ring is on disk; seed 000: memory is not the binding constraint).",
            constraints: [.range(1_048_576, 17_592_186_044_416)]),
    ]
}
