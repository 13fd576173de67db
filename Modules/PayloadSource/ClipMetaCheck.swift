import Syscall

extension ClipMeta {
    /// The largest magnitude of a time in meta.json, ns: 2^60, 36.5 years of a capture clock (CLOCK_MONOTONIC counts
    /// from boot). Two such times subtract, and a clock offset of the same bound adds, without overflowing an Int64.
    public static let maxTimeNs: Int64 = 1 << 60
    /// The largest file a bundle may list: 1 TiB (a clip is some megabytes; an hour of 4K intra video is some hundred GB).
    public static let maxFileBytes = 1 << 40
    /// The most files a bundle may list (a clip's bundle has three besides meta.json).
    public static let maxFiles = 16
    /// The largest frame count, frame rate and frame side; the highest audio rate.
    public static let maxFrames = 1 << 32, maxFramesPerSecond = 100_000, maxSide = 65_536, maxSampleRate = 10_000_000

    /// What in this meta.json no capture could have written — a time, size, count or rate out of range, a file name that
    /// is not one plain name — naming the field and its value; nil when every one is in range. `ClipMeta.read` refuses
    /// such a meta.json: a host reads what a device sent, and every reader does arithmetic on these figures (a clip's
    /// bytes summed, t0 less the clip's time zero, t0 moved onto the host clock), which must not overflow.
    public var problem: String? {
        func time(_ v: Int64, _ field: String) -> String? {
            (-Self.maxTimeNs...Self.maxTimeNs).contains(v)
                ? nil : "\(field) \(v) is out of range (a time on the capture clock, ns, within ±2^60)"
        }
        func count<I: BinaryInteger>(_ v: I, _ field: String, _ range: ClosedRange<I>) -> String? {
            range.contains(v) ? nil : "\(field) \(v) is out of range \(range.lowerBound)…\(range.upperBound)"
        }
        func name(_ v: String, _ field: String) -> String? { PlainName.problem(v, what: field) }
        var checks: [String?] = [
            time(t0Ns.value, "t0Ns.value"), time(window.startNs, "window.startNs"), time(window.endNs, "window.endNs"),
            time(window.firstFrameNs, "window.firstFrameNs"), time(window.clipTimeZeroNs, "window.clipTimeZeroNs"),
            time(window.clipPreNs.value, "window.clipPreNs.value"),
            time(window.clipPostNs.value, "window.clipPostNs.value"),
            count(frames, "frames", 0...Self.maxFrames),
            count(captureProfile.width, "captureProfile.width", 0...Self.maxSide),
            count(captureProfile.height, "captureProfile.height", 0...Self.maxSide),
            count(captureProfile.framesPerSecond, "captureProfile.framesPerSecond", 1...Self.maxFramesPerSecond),
            time(
                captureProfile.frameStartToExposureOffsetNs.value, "captureProfile.frameStartToExposureOffsetNs.value"),
            count(timeline.entries, "timeline.entries", 0...Self.maxFrames), name(timeline.file, "timeline.file"),
            count(files.count, "files (how many)", 0...Self.maxFiles),
            count(candidate.onsetSample, "candidate.onsetSample", -Self.maxTimeNs...Self.maxTimeNs),
            count(candidate.decidedAtSample, "candidate.decidedAtSample", -Self.maxTimeNs...Self.maxTimeNs),
        ]
        checks += window.gaps.indices.map { time(window.gaps[$0].missingNs, "window.gaps[\($0)].missingNs") }
        for (file, f) in files.sorted(by: { $0.key < $1.key }) {
            checks.append(name(file, "files: a name") ?? (file == "meta.json" ? "files lists meta.json itself" : nil))
            checks.append(count(f.bytes, "files.\(file).bytes", 0...Self.maxFileBytes))
        }
        if let a = audio {
            checks += [
                name(a.file, "audio.file"), count(a.sampleRate, "audio.sampleRate", 1...Self.maxSampleRate),
                count(a.firstSample, "audio.firstSample", -Self.maxTimeNs...Self.maxTimeNs),
                count(a.samples, "audio.samples", 0...Self.maxFileBytes),
                count(a.missingSamples, "audio.missingSamples", 0...Self.maxFileBytes),
                time(a.windowNs.value, "audio.windowNs.value"),
                time(a.preNs.value, "audio.preNs.value"),
                a.firstSampleNs.flatMap { time($0.value, "audio.firstSampleNs.value") },
            ]
            // A sample period of 100 ns (10 MHz) to 1 s: any time in range over it then fits an Int.
            if let p = a.nsPerSample?.value, !(p >= 100 && p <= 1e9) {
                checks.append("audio.nsPerSample.value \(p) is out of range (a sample period, ns, 100…1e9)")
            }
        }
        if let t = soundTrack {
            checks += [
                count(t.sampleRate, "soundTrack.sampleRate", 1...Self.maxSampleRate),
                count(t.samples, "soundTrack.samples", 0...Self.maxFileBytes),
                t.strikeOffsetNs.flatMap { time($0.value, "soundTrack.strikeOffsetNs.value") },
            ]
        }
        if let t = trigger, t.utf8.count > 256 || t.unicodeScalars.contains(where: { $0.value < 0x20 }) {
            checks.append(
                "trigger: \(t.utf8.count) bytes, or a control character: not how a shot was known (at most 256 bytes of text)"
            )
        }
        return checks.lazy.compactMap { $0 }.first
    }
}
