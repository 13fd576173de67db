import Config
import Foundation
import FragmentRing
import LibavEncoder
import Pipeline
import Session
import Synthetic
import TestSupport
import Testing

/// A detector that hears exactly the script's impacts (the session's plumbing is under test here, not detection).
final class ScriptedDetector: ImpactDetecting {
    let impactsSeconds: [Double]
    var rate = 48_000
    var startNs: Int64 = 0
    var position: Int64 = 0
    var next = 0

    init(_ impactsSeconds: [Double]) { self.impactsSeconds = impactsSeconds }

    func start(sampleRate: Int, streamStartNs: Int64) throws {
        rate = sampleRate
        startNs = streamStartNs
    }

    func process(_ samples: UnsafeBufferPointer<Float>, emit: (DetectedImpact) -> Void) {
        position += Int64(samples.count)
        while next < impactsSeconds.count, Int64(impactsSeconds[next] * Double(rate)) < position {
            let sample = Int64(impactsSeconds[next] * Double(rate))
            next += 1
            emit(DetectedImpact(
                id: UInt64(next), onsetSample: sample, impactSample: Double(sample),
                t0Ns: startNs + sample * 1_000_000_000 / Int64(rate), score: 1, features: [:], tofCorrectionSamples: nil,
                tofProvenance: "none", decidedAtSample: position))
        }
    }

    func skip(samples count: Int64) { position += count }
}

/// A sink whose first delivery waits until the session has announced `expected` clips — which a mint thread that
/// delivered clips itself could never do — or until a minute has passed.
///
/// Its preparation (a network sink reaching its host) waits until a second of frames has been captured, which a
/// session that prepared its sinks before capture could never do.
final class AnnouncementGatedSink: ClipSink, EventSink, DeliveryPreparing, FrameObserving, @unchecked Sendable {
    // @unchecked: `announced`, `framesSeen` and the records under `condition`.
    let expected: Int
    let condition = NSCondition()
    var announced: [String] = []
    var framesSeen = 0
    var framesSeenWhenPrepared = 0
    var deliveredAfterAnnouncements: [Int] = []
    var directory = ""

    init(expected: Int) { self.expected = expected }

    func open(_ context: SessionContext) throws {
        directory = "\(context.outputDirectory)/gated"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    func deliver(staged: String, clipID: String) throws -> String {
        condition.lock()
        let deadline = Date(timeIntervalSinceNow: 60)
        while announced.count < expected, condition.wait(until: deadline) {}
        deliveredAfterAnnouncements.append(announced.count)
        condition.unlock()
        let destination = "\(directory)/\(clipID)"
        try FileManager.default.moveItem(atPath: staged, toPath: destination)
        return destination
    }

    func prepareDeliveries() {
        condition.lock()
        let deadline = Date(timeIntervalSinceNow: 60)
        while framesSeen < 30, condition.wait(until: deadline) {}
        framesSeenWhenPrepared = framesSeen
        condition.unlock()
    }

    func observe(_ frame: VideoFrameBuffer, format: VideoFormat, info: FrameInfo) {
        condition.lock()
        framesSeen += 1
        if framesSeen == 30 { condition.broadcast() }
        condition.unlock()
    }

    func finish() throws {}
    func candidate(_ c: DetectedImpact) {}
    func shot(_ c: DetectedImpact) {}
    func announce(clipID: String, bytes: UInt64, files: Int) {
        condition.lock()
        announced.append(clipID)
        condition.broadcast()
        condition.unlock()
    }
}

@Suite("Session: deliveries never hold up capture or minting")
struct DeliveryTests {
    @Test func aSinkThatWaitsNeverHoldsUpCaptureNorTheMintingOfLaterShots() throws {
        let tmp = TemporaryDirectory("ppc-delivery")
        // Three shots 3.5 s apart in a ring of 3 s: each one's pre-roll is recycled 3 s after it was captured, so a mint
        // that waited for the first clip's delivery would lose the later ones. The video is paced like a camera and the
        // audio runs ahead, so each shot is heard in time however loaded the machine.
        let impacts = [1.5, 5.0, 8.5]
        let seconds = 10.0
        let format = VideoFormat(width: 160, height: 96, framesPerSecond: 30)
        let script = SwingScript(impactSeconds: impacts, startNs: 0)
        let config = try Configuration(overrides: [
            Override(key: "capture.videoBitrateBps", value: .integer(300_000), origin: "test"),
            Override(key: "capture.expectedFrameRate", value: .integer(30), origin: "test"),
            Override(key: "capture.fragmentCapacity", value: .integer(6), origin: "test"),
            Override(key: "capture.clipPreNs", value: .integer(500_000_000), origin: "test"),
            Override(key: "capture.clipPostNs", value: .integer(500_000_000), origin: "test"),
        ])
        let sink = AnnouncementGatedSink(expected: impacts.count)
        let runner = try SessionRunner(
            .init(
                video: SyntheticVideoSource(format: format, script: script, seconds: seconds, pace: .realtime),
                audio: SyntheticAudioSource(sampleRate: 48_000, script: script, seconds: seconds), imu: nil,
                encoder: LibavVideoEncoder(codec: .h264, bitrateBps: 300_000, preset: "ultrafast", threads: 1),
                detector: ScriptedDetector(impacts), sinks: [sink], config: config),
            options: .init(context: SessionContext(outputDirectory: tmp.sub("out"), deviceID: "bay-1", session: "gated")))
        let report = try runner.run()
        #expect(report.errors.isEmpty, "\(report.errors)")
        #expect(report.clips.count == impacts.count)
        // The sink was prepared while capture ran, and its first delivery began only once every clip had been minted
        // and announced.
        #expect(sink.framesSeenWhenPrepared >= 30)
        #expect(sink.deliveredAfterAnnouncements == [3, 3, 3])
        // Every clip confirmed: no fragment stays pinned.
        let ring = try FragmentRing(
            directory: tmp.sub("out/ring"), configuration: SessionRunner.ringConfiguration(capacity: 6, fileExtension: "ts"))
        #expect(ring.pins.isEmpty)
    }
}
