import FragmentRing
import Pipeline
import TestSupport
import Testing
import TimelineIndex

@testable import Capture
@testable import Synthetic
@testable import ZstdCodec

/// A camera-like source over the synthetic picture: drops the frames it is told to (a sequence gap), reports an
/// interruption before a given frame, and fails for good after a given frame — what the v4l2 plugin does, without a device.
final class ScriptedCamera: VideoSource, InterruptionReporting {
    let inner: SyntheticVideoSource
    let skip: Set<Int64>
    let interruptBefore: Int64?
    let failAfter: Int64?
    var onInterruption: ((SourceInterruption) -> Void)?
    var served: Int64 = 0

    init(frames: Int, skip: Set<Int64> = [], interruptBefore: Int64? = nil, failAfter: Int64? = nil) {
        let format = VideoFormat(width: 160, height: 96, framesPerSecond: 60)
        inner = SyntheticVideoSource(format: format, script: SwingScript(impactsNs: []), seconds: Double(frames) / 60)
        self.skip = skip
        self.interruptBefore = interruptBefore
        self.failAfter = failAfter
    }

    var format: VideoFormat { inner.format }

    struct Gone: Error, CustomStringConvertible { var description: String { "/dev/fake: device lost and not back" } }

    func readFrame(into frame: VideoFrameBuffer) throws -> FrameInfo? {
        while true {
            if let f = failAfter, served > f { throw Gone() }
            guard let info = try inner.readFrame(into: frame) else { return nil }
            if skip.contains(info.index) { continue }
            if info.index == interruptBefore {
                onInterruption?(
                    SourceInterruption(id: 1, startNs: info.timeNs - 1_000_000, reason: "device lost (test)"))
                onInterruption?(
                    SourceInterruption(
                        id: 1, startNs: info.timeNs - 1_000_000, endNs: info.timeNs - 1, reason: "device lost (test)",
                        verified: true))
            }
            served += 1
            return info
        }
    }
}

@Suite("Capture: drops and interruptions go on the timeline; a lost source keeps what it captured")
struct InterruptionTests {
    func setup() throws -> (TemporaryDirectory, FragmentRing, TimelineIndex, SourceTimeline) {
        let tmp = TemporaryDirectory("ppc-interrupt")
        let ring = try FragmentRing(
            directory: tmp.sub("ring"), configuration: .init(capacity: 20, durability: .none, fileExtension: "zst"))
        let index = TimelineIndex()
        let video = index.register(SourceID(1), name: "video", rateHz: 200, windowSeconds: 10)
        return (tmp, ring, index, video)
    }

    @Test func sequenceGapsAreCountedAndEachInterruptionIsRecordedOpenThenVerified() throws {
        let (tmp, ring, index, video) = try setup()
        defer { withExtendedLifetime(tmp) {} }
        let camera = ScriptedCamera(frames: 120, skip: [10, 11, 12, 50], interruptBefore: 80)
        let session = CaptureSession(
            source: camera, encoder: ZstdFragmentEncoder(level: 1), ring: ring, timeline: video, fragmentNs: 500_000_000
        )
        var seen: [SourceInterruption] = []
        session.onInterruption = { seen.append($0) }
        let stats = try session.run()
        #expect(stats.framesMissingAtSource == 4)
        #expect(stats.framesCaptured == 116)
        let snap = index.snapshot(startNs: .min, endNs: .max)
        let drops = snap.entries(of: .drop)
        #expect(drops.map(\.reference) == [10, 50])
        #expect(drops.map(\.value) == [3, 1])
        let interruptions = snap.entries(of: .interruption)
        #expect(interruptions.count == 2, "one entry when noticed, one when verified")
        #expect(interruptions.map(\.value) == [0, 999_999])
        #expect(seen.map(\.verified) == [false, true])
        #expect(stats.timestampsMonotonic)
    }

    @Test func aSourceThatFailsForGoodKeepsEveryFrameEncodedBeforeIt() throws {
        let (tmp, ring, _, video) = try setup()
        defer { withExtendedLifetime(tmp) {} }
        let camera = ScriptedCamera(frames: 120, failAfter: 44)
        let session = CaptureSession(
            source: camera, encoder: ZstdFragmentEncoder(level: 1), ring: ring, timeline: video, fragmentNs: 500_000_000
        )
        #expect(throws: ScriptedCamera.Gone.self) { try session.run() }
        let stats = try #require(session.lastStatistics)
        #expect(stats.framesEncoded == 45)
        // The open fragment was flushed into the ring, not dropped: every encoded frame is in a published fragment.
        #expect(ring.fragments.reduce(0) { $0 + Int($1.frameCount) } == 45)
    }
}
