import Glibc

/// One device streaming one mode for the life of a session: warmed once (input, format, rate pinned and read back,
/// automatic controls locked off), then frames dequeued with their sequence numbers and kernel timestamps.
///
/// After the device is lost, `rewarm()` opens it again, applies the same mode and checks the format came back
/// unchanged; the caller then verifies frames arrive before calling itself armed (seed 001's verify-after-resume).
public final class V4L2Stream {
    public let path: String
    public let mode: CaptureMode
    public let bufferCount: Int
    public private(set) var device: V4L2Device
    /// The format in force after warm (the one a resume must find again).
    public private(set) var format: V4L2PixelFormat
    /// The frame interval read back after S_PARM.
    public private(set) var interval: FrameInterval
    /// Whether the device took the interval ppc asked for (false: reported, not trusted).
    public private(set) var rateHonoured: Bool
    /// What warm did, one sentence per setting: the rate, each control locked, absent or refused.
    public private(set) var warmReport: [String] = []
    /// Buffers the driver gave.
    public private(set) var buffersGranted = 0

    /// Opens `path`, applies `mode` and starts streaming.
    public init(path: String, mode: CaptureMode, buffers: Int) throws(V4L2Error) {
        self.path = path
        self.mode = mode
        self.bufferCount = buffers
        let d = try V4L2Device(path: path)
        device = d
        (format, interval, rateHonoured, warmReport) = try Self.warm(d, mode)
        buffersGranted = try d.startStreaming(buffers: buffers)
    }

    /// Opens the device again after a loss and applies the same mode; throws when the device is not back, or came back
    /// with a different format (a session never changes format: seed 000, one format for its life).
    public func rewarm() throws(V4L2Error) {
        device.close()
        let d = try V4L2Device(path: path)
        let (f, i, honoured, report) = try Self.warm(d, mode)
        guard f == format else {
            throw V4L2Error(
                .notHonoured, device: path, operation: "resume",
                "the device came back as \(f), not \(format); the session keeps one format for its life")
        }
        device = d
        interval = i
        rateHonoured = honoured
        warmReport = report
        buffersGranted = try d.startStreaming(buffers: bufferCount)
    }

    /// Stops streaming, releases the buffers and closes the device.
    public func stop() { device.close() }

    static func warm(_ d: V4L2Device, _ mode: CaptureMode) throws(V4L2Error) -> (
        V4L2PixelFormat, FrameInterval, Bool, [String]
    ) {
        var report: [String] = []
        if !(try d.inputs()).isEmpty { try d.selectInput(mode.input) }
        let f = try d.setFormat(mode.fourcc, width: mode.width, height: mode.height)
        guard f.fourcc == mode.fourcc, f.width == mode.width, f.height == mode.height else {
            throw V4L2Error(
                .notHonoured, device: d.path, operation: "S_FMT",
                "asked for \(mode.fourcc) \(mode.width)x\(mode.height), the driver set \(f)")
        }
        var interval = mode.interval
        var honoured = true
        if let current = try d.frameInterval() {
            if current.settable {
                let got = try d.setFrameInterval(mode.interval)
                interval = got
                honoured = abs(got.framesPerSecond - mode.framesPerSecond) <= 0.001 * mode.framesPerSecond
                report.append(
                    honoured
                        ? "frame interval pinned to \(got) (\(formatRate(got.framesPerSecond)) fps) and read back"
                        : "frame interval: asked for \(mode.interval), the device reports \(got) — not honoured; the rate is reported, not trusted"
                )
            } else {
                interval = current.interval
                honoured = abs(current.interval.framesPerSecond - mode.framesPerSecond) <= 0.001 * mode.framesPerSecond
                report.append(
                    "frame interval cannot be set (no V4L2_CAP_TIMEPERFRAME); the device runs at \(current.interval) (\(formatRate(current.interval.framesPerSecond)) fps)\(honoured ? "" : " — not the mode's rate; reported, not trusted")"
                )
            }
        } else {
            honoured = false
            report.append("frame interval cannot be read (no G_PARM); the rate is not trusted")
        }
        report += lockControls(d)
        return (f, interval, honoured, report)
    }

    /// Seed 000 REQ-OPT-1..4: every automatic control the device has is turned off once, here, and never touched again
    /// while armed. Each is reported: locked, absent, or refused by the device.
    static func lockControls(_ d: V4L2Device) -> [String] {
        let present = Set(((try? d.controls()) ?? []).map(\.id))
        let locks: [(UInt32, Int32, String)] = [
            (V4L2ControlID.exposureAuto, V4L2ControlID.exposureManual, "exposure: manual"),
            (
                V4L2ControlID.exposureAutoPriority, 0,
                "exposure priority: off (the frame rate may not drop for exposure)"
            ),
            (V4L2ControlID.focusAuto, 0, "focus: fixed (autofocus off)"),
            (V4L2ControlID.autoWhiteBalance, 0, "white balance: manual"),
            (V4L2ControlID.autoGain, 0, "gain: manual"),
            (V4L2ControlID.autoBrightness, 0, "brightness: manual"),
            (V4L2ControlID.hueAuto, 0, "hue: manual"),
            (V4L2ControlID.imageStabilization, 0, "stabilisation: off"),
        ]
        var out: [String] = []
        for (id, value, what) in locks {
            guard present.contains(id) else {
                out.append("\(what.split(separator: ":")[0]): the device has no such control")
                continue
            }
            do {
                try d.setControl(id, value)
                let back = try d.control(id)
                out.append(
                    back == value ? "\(what) — locked at warm" : "\(what) — asked, the device reads back \(back)")
            } catch {
                out.append("\(what) — refused: \(error)")
            }
        }
        return out
    }
}
