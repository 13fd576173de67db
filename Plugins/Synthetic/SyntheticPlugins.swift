import Config
import Pipeline
import Syscall

/// The synthetic sources' registrations. Each shares `seconds` and `impacts` so one manifest can give all three the
/// same script; defaults describe a 12 s session with three swings.
public enum SyntheticPlugins {
    static let defaultImpacts: JSONValue = .array([2.5, 5.5, 8.5].map { JSONNode(.number($0, isInteger: false)) })

    static let sessionParameters: [PluginParameterSpec] = [
        .init(
            "seconds", .number, default: .number(12, isInteger: true), minimum: 0, maximum: 86_400,
            "Length of the stream, seconds."),
        .init(
            "impacts", .numberArray, default: defaultImpacts, minimum: 0, maximum: 86_400,
            "Impact times, seconds from the start (the truth)."),
        .init(
            "startNs", .integer, default: .number(0, isInteger: true), minimum: -1, maximum: 4.0e18,
            "Capture-clock time of the first frame/sample, ns; -1: now on CLOCK_MONOTONIC (to pair with a camera's frames)."
        ),
    ]

    /// The stream's start on the capture clock: as given, or (for -1) CLOCK_MONOTONIC now, so a synthetic stream
    /// lines up with a camera whose frames carry the kernel's monotonic timestamps.
    static func startNs(_ p: PluginParameters) -> Int64 {
        let s = Int64(p.integer("startNs"))
        return s < 0 ? monotonicNowNs() : s
    }

    static func script(_ p: PluginParameters, startNs: Int64) -> SwingScript {
        SwingScript(impactSeconds: p.numbers("impacts"), startNs: startNs)
    }

    /// NV12 needs an even width and height.
    @Sendable static func evenFrame(_ p: PluginParameters) -> String? {
        let (w, h) = (p.integer("width"), p.integer("height"))
        return w % 2 == 0 && h % 2 == 0 ? nil : "width and height must be even for NV12, found \(w)x\(h)"
    }

    public static let video = PluginFactory(
        PluginDescriptor(
            name: "synthetic.video", kind: .videoSource,
            summary:
                "NV12 frames of a swinging club shaft with a known angle, a ball that leaves at impact, and a frame-counter bar code.",
            parameters: [
                .init(
                    "width", .integer, default: .number(640, isInteger: true), minimum: 160, maximum: 7680,
                    "Frame width, pixels (even; the frame counter needs 160)."),
                .init(
                    "height", .integer, default: .number(360, isInteger: true), minimum: 48, maximum: 4320,
                    "Frame height, pixels (even)."),
                .init(
                    "fps", .integer, default: .number(120, isInteger: true), minimum: 1, maximum: 10_000,
                    "Frames per second (up to a high-speed camera's, so selftest can ask for what a machine cannot sustain)."
                ),
                .init(
                    "pace", .choice(SyntheticVideoSource.Pace.allCases.map(\.rawValue)), default: .string("asap"),
                    "asap: as fast as read; realtime: no faster than a camera."),
                .init(
                    "texture", .choice(SyntheticVideoSource.Texture.allCases.map(\.rawValue)),
                    default: .string("noise"),
                    "noise: a sensor-like picture that costs an encoder what a camera would; flat: nearly free."),
            ] + sessionParameters,
            check: evenFrame),
        make: { p, _ in
            if let why = evenFrame(p) { throw RegistryError("synthetic.video: \(why)") }
            let w = p.integer("width")
            let h = p.integer("height")
            let start = startNs(p)
            return SyntheticVideoSource(
                format: VideoFormat(width: w, height: h, framesPerSecond: p.integer("fps")),
                script: script(p, startNs: start),
                startNs: start, seconds: p.number("seconds"),
                pace: SyntheticVideoSource.Pace(rawValue: p.string("pace"))!,
                texture: SyntheticVideoSource.Texture(rawValue: p.string("texture"))!)
        })

    public static let mjpeg = PluginFactory(
        PluginDescriptor(
            name: "synthetic.mjpeg", kind: .videoSource,
            summary:
                "Motion JPEG as a USB camera sends it, with synthetic.video's picture: every frame encoded before arming, then paced.",
            parameters: [
                .init(
                    "width", .integer, default: .number(1920, isInteger: true), minimum: 160, maximum: 7680,
                    "Frame width, pixels (even)."),
                .init(
                    "height", .integer, default: .number(1080, isInteger: true), minimum: 48, maximum: 4320,
                    "Frame height, pixels (even)."),
                .init(
                    "fps", .integer, default: .number(120, isInteger: true), minimum: 1, maximum: 10_000,
                    "Frames per second (up to a high-speed camera's, so selftest can ask for what a machine cannot sustain)."
                ),
                .init(
                    "pace", .choice(SyntheticVideoSource.Pace.allCases.map(\.rawValue)), default: .string("realtime"),
                    "realtime: no faster than a camera (the default: a camera's frames do not come faster); asap: as fast as read."
                ),
                .init(
                    "texture", .choice(SyntheticVideoSource.Texture.allCases.map(\.rawValue)), default: .string("flat"),
                    "flat: small JPEGs; noise: large ones, like a sensor's picture (memory: see distinctSeconds)."),
                .init(
                    "quality", .integer, default: .number(5, isInteger: true), minimum: 2, maximum: 31,
                    "JPEG qscale, 2 (best) to 31."),
                .init(
                    "distinctSeconds", .number, default: .number(0, isInteger: true), minimum: 0, maximum: 86_400,
                    "Prepare only this many seconds of frames and repeat them (bounds memory on long runs); 0: every frame distinct."
                ),
            ] + sessionParameters,
            check: evenFrame),
        make: { p, _ in
            if let why = evenFrame(p) { throw RegistryError("synthetic.mjpeg: \(why)") }
            let start = startNs(p)
            return try SyntheticMJPEGSource(
                width: p.integer("width"), height: p.integer("height"), framesPerSecond: p.integer("fps"),
                script: script(p, startNs: start), startNs: start, seconds: p.number("seconds"),
                pace: SyntheticVideoSource.Pace(rawValue: p.string("pace"))!,
                texture: SyntheticVideoSource.Texture(rawValue: p.string("texture"))!, quality: p.integer("quality"),
                distinctSeconds: p.number("distinctSeconds"))
        })

    public static let audio = PluginFactory(
        PluginDescriptor(
            name: "synthetic.audio", kind: .audioSource,
            summary:
                "Mono room noise, a whoosh before each impact and a sharp impact starting exactly at the impact sample.",
            parameters: [
                .init(
                    "sampleRate", .integer, default: .number(48_000, isInteger: true), minimum: 8000, maximum: 384_000,
                    "Samples per second."),
                .init(
                    "noiseDbfs", .number, default: .number(-60, isInteger: true), minimum: -200, maximum: 0,
                    "Room noise level, dBFS."),
                .init(
                    "impactDbfs", .number, default: .number(-12, isInteger: true), minimum: -200, maximum: 0,
                    "Impact peak level, dBFS."),
                .init(
                    "seed", .integer, default: .number(1, isInteger: true), minimum: 0, maximum: 9.0e15,
                    "Noise generator seed."),
                .init(
                    "pace", .choice(SyntheticVideoSource.Pace.allCases.map(\.rawValue)), default: .string("asap"),
                    "realtime: each 10 ms block arrives when a sound card's would; asap: as fast as it can be made."),
                .init(
                    "awayAt", .numberArray, default: .array([]), minimum: 0, maximum: 86_400,
                    "Times (s) the microphone is pulled out and put back awaySeconds later: a test double for a card's outage."
                ),
                .init(
                    "awaySeconds", .number, default: .number(1, isInteger: true), minimum: 0.01, maximum: 3600,
                    "How long each outage lasts, s."),
            ] + sessionParameters),
        make: { p, _ in
            let start = startNs(p)
            return SyntheticAudioSource(
                sampleRate: p.integer("sampleRate"), script: script(p, startNs: start), startNs: start,
                seconds: p.number("seconds"), noiseDbfs: p.number("noiseDbfs"), impactDbfs: p.number("impactDbfs"),
                seed: UInt64(p.integer("seed")), pace: SyntheticVideoSource.Pace(rawValue: p.string("pace"))!,
                awayAtSeconds: p.numbers("awayAt"), awaySeconds: p.number("awaySeconds"))
        })

    public static let imu = PluginFactory(
        PluginDescriptor(
            name: "synthetic.imu", kind: .imuSource,
            summary: "IMU samples (gravity, noise and the ground's shake at each impact) at a fixed rate.",
            parameters: [
                .init(
                    "rateHz", .integer, default: .number(100, isInteger: true), minimum: 1, maximum: 10_000,
                    "Samples per second.")
            ] + sessionParameters),
        make: { p, _ in
            let start = startNs(p)
            return SyntheticIMUSource(
                rateHz: p.integer("rateHz"), script: script(p, startNs: start), startNs: start,
                seconds: p.number("seconds"))
        })

    public static let all = [video, mjpeg, audio, imu]
}
