import CALSA

/// A failed ALSA call: what was being done, on which device, and libasound's own words for the code.
public struct ALSAError: Error, Sendable, CustomStringConvertible {
    public let operation: String
    public let device: String
    /// The negative errno libasound returned (0 when the failure is ours, e.g. a format nothing offers).
    public let code: Int32
    public let detail: String

    public init(_ operation: String, device: String, code: Int32 = 0, _ detail: String = "") {
        self.operation = operation
        self.device = device
        self.code = code
        self.detail = detail.isEmpty && code != 0 ? String(cString: snd_strerror(code)) : detail
    }

    public var description: String { "ALSA \(device): \(operation): \(detail)" }
}

/// Sample formats ppc reads, in the order it prefers them (integer first: it is what capture hardware delivers).
public enum PCMSampleFormat: String, Sendable, CaseIterable {
    case s16 = "S16_LE"
    case s32 = "S32_LE"
    case float = "FLOAT_LE"

    var alsa: snd_pcm_format_t {
        switch self {
        case .s16: SND_PCM_FORMAT_S16_LE
        case .s32: SND_PCM_FORMAT_S32_LE
        case .float: SND_PCM_FORMAT_FLOAT_LE
        }
    }

    public var bytes: Int { self == .s16 ? 2 : 4 }
}

/// One point of a PCM's clock: the stream's sample `position` was at the converter at `timeNs` on CLOCK_MONOTONIC
/// (from `snd_pcm_status`: the htstamp, read with the monotonic timestamp type, and the delay at that instant).
public struct PCMClockPoint: Sendable, Equatable {
    public var position: Int64
    public var timeNs: Int64
}

@inline(__always) func check(_ r: Int32, _ operation: @autoclosure () -> String, _ device: String) throws(ALSAError) {
    if r < 0 { throw ALSAError(operation(), device: device, code: r) }
}

/// An open PCM (capture or playback) configured for low latency: interleaved, the first format of `formats` the
/// device takes, the rate nearest the wish, `periodFrames` per period and `periods` periods of buffer, monotonic
/// timestamps. The hardware parameters as granted are in `configuration`.
public final class PCM {
    public struct Configuration: Sendable, Equatable, CustomStringConvertible {
        public var device: String
        public var sampleRate: Int
        public var channels: Int
        public var format: PCMSampleFormat
        public var periodFrames: Int
        public var bufferFrames: Int

        public var periodNs: Int64 { Int64(periodFrames) * 1_000_000_000 / Int64(sampleRate) }
        public var bufferNs: Int64 { Int64(bufferFrames) * 1_000_000_000 / Int64(sampleRate) }
        public var description: String {
            "\(device) \(sampleRate) Hz \(channels) ch \(format.rawValue), period \(periodFrames) frames (\(Double(periodNs) / 1e6) ms), buffer \(bufferFrames) frames (\(Double(bufferNs) / 1e6) ms)"
        }
    }

    public enum Direction: Sendable { case capture, playback }

    let handle: OpaquePointer
    let status: OpaquePointer
    public let configuration: Configuration
    public let direction: Direction

    /// Opens `device` (e.g. `hw:0,0`, `plughw:Loopback,1,0`, `default`).
    public init(
        device: String, direction: Direction, sampleRate: Int, channels: Int,
        formats: [PCMSampleFormat] = PCMSampleFormat.allCases,
        periodFrames: Int, periods: Int
    ) throws(ALSAError) {
        ppc_alsa_silence_errors()
        var pcm: OpaquePointer?
        try check(
            snd_pcm_open(&pcm, device, direction == .capture ? SND_PCM_STREAM_CAPTURE : SND_PCM_STREAM_PLAYBACK, 0),
            "open for \(direction)", device)
        guard let pcm else { throw ALSAError("open", device: device, "no handle") }
        var hw: OpaquePointer?
        var sw: OpaquePointer?
        var st: OpaquePointer?
        guard snd_pcm_hw_params_malloc(&hw) == 0, snd_pcm_sw_params_malloc(&sw) == 0, snd_pcm_status_malloc(&st) == 0,
            let hw, let sw, let st
        else {
            snd_pcm_close(pcm)
            throw ALSAError("allocate parameters", device: device, "out of memory")
        }
        defer {
            snd_pcm_hw_params_free(hw)
            snd_pcm_sw_params_free(sw)
        }
        do throws(ALSAError) {
            try check(snd_pcm_hw_params_any(pcm, hw), "read hardware parameters", device)
            try check(
                snd_pcm_hw_params_set_access(pcm, hw, SND_PCM_ACCESS_RW_INTERLEAVED), "set interleaved access", device)
            guard let format = formats.first(where: { snd_pcm_hw_params_test_format(pcm, hw, $0.alsa) == 0 }) else {
                throw ALSAError(
                    "choose a sample format", device: device,
                    "the device offers none of \(formats.map(\.rawValue).joined(separator: ", "))")
            }
            try check(snd_pcm_hw_params_set_format(pcm, hw, format.alsa), "set format \(format.rawValue)", device)
            var ch = UInt32(channels)
            try check(snd_pcm_hw_params_set_channels_near(pcm, hw, &ch), "set \(channels) channel(s)", device)
            var rate = UInt32(sampleRate)
            var dir: Int32 = 0
            try check(snd_pcm_hw_params_set_rate_resample(pcm, hw, 0), "turn ALSA's resampler off", device)
            try check(snd_pcm_hw_params_set_rate_near(pcm, hw, &rate, &dir), "set rate \(sampleRate) Hz", device)
            var period = snd_pcm_uframes_t(periodFrames)
            try check(
                snd_pcm_hw_params_set_period_size_near(pcm, hw, &period, &dir), "set period \(periodFrames) frames",
                device)
            var buffer = period * snd_pcm_uframes_t(max(2, periods))
            try check(snd_pcm_hw_params_set_buffer_size_near(pcm, hw, &buffer), "set buffer \(buffer) frames", device)
            try check(snd_pcm_hw_params(pcm, hw), "apply hardware parameters", device)
            try check(snd_pcm_hw_params_get_period_size(hw, &period, &dir), "read period size", device)
            try check(snd_pcm_hw_params_get_buffer_size(hw, &buffer), "read buffer size", device)

            try check(snd_pcm_sw_params_current(pcm, sw), "read software parameters", device)
            try check(snd_pcm_sw_params_set_tstamp_mode(pcm, sw, SND_PCM_TSTAMP_ENABLE), "enable timestamps", device)
            try check(
                snd_pcm_sw_params_set_tstamp_type(pcm, sw, SND_PCM_TSTAMP_TYPE_MONOTONIC),
                "use CLOCK_MONOTONIC timestamps", device)
            try check(snd_pcm_sw_params_set_avail_min(pcm, sw, period), "set avail_min", device)
            // Playback starts once a full buffer is queued; capture starts at the first read.
            try check(
                snd_pcm_sw_params_set_start_threshold(pcm, sw, direction == .playback ? buffer : 1),
                "set start threshold", device)
            try check(snd_pcm_sw_params(pcm, sw), "apply software parameters", device)
            configuration = Configuration(
                device: device, sampleRate: Int(rate), channels: Int(ch), format: format, periodFrames: Int(period),
                bufferFrames: Int(buffer))
        } catch {
            snd_pcm_status_free(st)
            snd_pcm_close(pcm)
            throw error
        }
        handle = pcm
        status = st
        self.direction = direction
    }

    deinit {
        snd_pcm_status_free(status)
        snd_pcm_close(handle)
    }

    /// Reads up to `frames` interleaved frames into `buffer` (blocking). Returns the frames read, or a negative errno
    /// (-EPIPE: overrun, -ESTRPIPE: suspended), which the caller recovers from with `recover`.
    @inline(__always)
    public func readInterleaved(_ buffer: UnsafeMutableRawPointer, frames: Int) -> Int {
        snd_pcm_readi(handle, buffer, snd_pcm_uframes_t(frames))
    }

    /// Writes `frames` interleaved frames (blocking); the frames written or a negative errno.
    public func writeInterleaved(_ buffer: UnsafeRawPointer, frames: Int) -> Int {
        snd_pcm_writei(handle, buffer, snd_pcm_uframes_t(frames))
    }

    /// After an xrun (-EPIPE) or a suspend (-ESTRPIPE): prepares the stream again (capture restarts at the next read).
    public func recover(_ code: Int) throws(ALSAError) {
        try check(
            snd_pcm_recover(handle, Int32(code), 1), "recover from \(String(cString: snd_strerror(Int32(code))))",
            configuration.device)
    }

    /// Lets queued playback finish.
    public func drain() { snd_pcm_drain(handle) }

    /// Where the stream's clock is now: for capture, `framesTransferred` (frames read so far) plus the delay (frames
    /// captured but not yet read) were at the converter at the status timestamp; for playback, `framesTransferred`
    /// minus the delay (frames written but not yet played). Nil when the stream is not running (no timestamp).
    public func clockPoint(framesTransferred: Int64) throws(ALSAError) -> PCMClockPoint? {
        try check(snd_pcm_status(handle, status), "read status", configuration.device)
        let state = snd_pcm_status_get_state(status)
        guard state == SND_PCM_STATE_RUNNING else { return nil }
        var ts = snd_htimestamp_t()
        snd_pcm_status_get_htstamp(status, &ts)
        guard ts.tv_sec != 0 || ts.tv_nsec != 0 else { return nil }
        let delay = Int64(snd_pcm_status_get_delay(status))
        let position = direction == .capture ? framesTransferred + delay : framesTransferred - delay
        return PCMClockPoint(position: position, timeNs: Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec))
    }
}
