/// A capture mode in words — `WIDTHxHEIGHT@FPS`, then optionally a codec: `1920x1080@120 h264`. A device states it in
/// its hello (a host's ingest policy judges it); a person types it (`selftest --source synthetic:1280x720@120`). One
/// parser for both, so the two can never read the same text two ways.
public struct CaptureProfile: Sendable, Equatable, CustomStringConvertible {
    public var width: Int
    public var height: Int
    /// Frames per second; 59.94 and the like are kept as given.
    public var framesPerSecond: Double
    public var codec: String?

    public init(width: Int, height: Int, framesPerSecond: Double, codec: String? = nil) {
        self.width = width
        self.height = height
        self.framesPerSecond = framesPerSecond
        self.codec = codec
    }

    /// Parses `WxH@FPS[ codec]`; nil when the text does not state a positive width, height and rate.
    public init?(_ text: some StringProtocol) {
        let words = text.split(separator: " ", maxSplits: 1)
        guard let mode = words.first else { return nil }
        let size = mode.split(separator: "@", omittingEmptySubsequences: false)
        guard size.count == 2, let fps = Double(size[1]), fps.isFinite, fps > 0 else { return nil }
        let wh = size[0].split(separator: "x", omittingEmptySubsequences: false)
        guard wh.count == 2, let w = Int(wh[0]), let h = Int(wh[1]), w > 0, h > 0 else { return nil }
        self.init(width: w, height: h, framesPerSecond: fps, codec: words.count > 1 ? String(words[1]) : nil)
    }

    /// The rate as a whole number when it is one (`120`), else as given (`59.94`).
    public var rateText: String {
        framesPerSecond == framesPerSecond.rounded() && abs(framesPerSecond) < 1e15
            ? String(Int(framesPerSecond)) : String(framesPerSecond)
    }

    public var description: String { "\(width)x\(height)@\(rateText)" + (codec.map { " \($0)" } ?? "") }
}
