import Config
import FileSink
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
            emit(
                DetectedImpact(
                    id: UInt64(next), onsetSample: sample, impactSample: Double(sample),
                    t0Ns: startNs + sample * 1_000_000_000 / Int64(rate), score: 1, features: [:],
                    tofCorrectionSamples: nil,
                    tofProvenance: "none", decidedAtSample: position))
        }
    }

    func skip(samples count: Int64) { position += count }
}

/// A sink whose first delivery waits until the session has announced `expected` clips — which a mint thread that
/// delivered clips itself could never do — or until a minute has passed.
///
/// Its first call when deliveries begin (where a network sink reaches its host) waits until a second of frames has been
/// captured, which a session that reached its host before capture could never do.
final class AnnouncementGatedSink: ClipSink, EventSink, OwedClipsSending, FrameObserving, @unchecked Sendable {
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

    var needsRetry: Bool { false }

    func sendOwed(while keepGoing: () -> Bool) -> [String] {
        condition.lock()
        defer { condition.unlock() }
        guard framesSeenWhenPrepared == 0 else { return [] }
        let deadline = Date(timeIntervalSinceNow: 60)
        while framesSeen < 30, condition.wait(until: deadline) {}
        framesSeenWhenPrepared = framesSeen
        return []
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

/// A sink whose host is away for the first clip: it keeps that clip in the outbox, as the network sink does, and sends
/// it when the session asks for what is owed.
final class AwayFirstSink: ClipSink, OwedClipsSending, @unchecked Sendable {
    // @unchecked: called on the session's delivery thread only.
    var outbox = ""
    var delivered = ""
    var deliveries = 0
    var askedToSendOwed = 0

    func open(_ context: SessionContext) throws {
        outbox = context.outboxDirectory
        delivered = "\(context.outputDirectory)/away-delivered"
        for d in [outbox, delivered] {
            try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        }
    }

    func deliver(staged: String, clipID: String) throws -> String {
        deliveries += 1
        if deliveries == 1 {
            try FileManager.default.moveItem(atPath: staged, toPath: "\(outbox)/\(clipID)")
            throw HostAway(clipID: clipID)
        }
        try FileManager.default.moveItem(atPath: staged, toPath: "\(delivered)/\(clipID)")
        return "\(delivered)/\(clipID)"
    }

    var needsRetry: Bool { false }

    func sendOwed(while keepGoing: () -> Bool) -> [String] {
        askedToSendOwed += 1
        let owed = ((try? FileManager.default.contentsOfDirectory(atPath: outbox)) ?? []).sorted()
        return owed.filter {
            (try? FileManager.default.moveItem(atPath: "\(outbox)/\($0)", toPath: "\(delivered)/\($0)")) != nil
        }
    }

    func finish() throws {}

    struct HostAway: Error, CustomStringConvertible {
        let clipID: String
        var description: String { "host away: \(clipID) waits in the outbox" }
    }
}

@Suite("Session: deliveries never hold up capture or minting")
struct DeliveryTests {
    static func session(
        _ out: String, impacts: [Double], seconds: Double, sinks: [ClipSink],
        observe: (@Sendable (SessionEvent) -> Void)? = nil
    ) throws -> SessionRunner {
        let format = VideoFormat(width: 160, height: 96, framesPerSecond: 30)
        let script = SwingScript(impactSeconds: impacts, startNs: 0)
        let config = try Configuration(overrides: [
            Override(key: "capture.videoBitrateBps", value: .integer(300_000), origin: "test"),
            Override(key: "capture.expectedFrameRate", value: .integer(30), origin: "test"),
            Override(key: "capture.fragmentCapacity", value: .integer(6), origin: "test"),
            Override(key: "capture.clipPreNs", value: .integer(500_000_000), origin: "test"),
            Override(key: "capture.clipPostNs", value: .integer(500_000_000), origin: "test"),
        ])
        return try SessionRunner(
            .init(
                video: SyntheticVideoSource(format: format, script: script, seconds: seconds, pace: .realtime),
                audio: SyntheticAudioSource(sampleRate: 48_000, script: script, seconds: seconds), imu: nil,
                encoder: LibavVideoEncoder(codec: .h264, bitrateBps: 300_000, preset: "ultrafast", threads: 1),
                detector: ScriptedDetector(impacts), sinks: sinks, config: config),
            options: .init(
                context: SessionContext(outputDirectory: out, deviceID: "bay-1", session: "deliver"), observe: observe))
    }

    /// A clip a sink could not take is owed, its pin recorded; once the sink takes the next clip, the session has it
    /// send what it owes, and the owed clip then counts as delivered by every sink, its pin and record released.
    @Test func aClipOwedIsSettledWhenTheSinkSendsItLaterInTheSameSession() throws {
        let tmp = TemporaryDirectory("ppc-delivery")
        let away = AwayFirstSink()
        let out = tmp.sub("out")
        let runner = try Self.session(out, impacts: [1.0, 3.0], seconds: 4.5, sinks: [FileSink(directory: nil), away])
        let report = try runner.run()
        #expect(report.errors.isEmpty, "\(report.errors)")
        #expect(report.clips.count == 2)
        let first = try #require(report.clips.first)
        #expect(
            first.confirmedBy.count == 2 && first.confirmedBy[1].contains("sent from the outbox after it was owed"),
            "\(first.confirmedBy)")
        #expect(report.document.clipsOwed.isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: "\(out)/away-delivered").count == 2)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: "\(out)/pins")) ?? []).isEmpty)
        let ring = try FragmentRing(
            directory: "\(out)/ring", configuration: SessionLayout.ringConfiguration(capacity: 6, fileExtension: "ts"))
        #expect(ring.pins.isEmpty)
    }

    @Test func aSinkThatWaitsNeverHoldsUpCaptureNorTheMintingOfLaterShots() throws {
        let tmp = TemporaryDirectory("ppc-delivery")
        // Three shots 3.5 s apart in a ring of 3 s: each one's pre-roll is recycled 3 s after it was captured, so a mint
        // that waited for the first clip's delivery would lose the later ones. The video is paced like a camera and the
        // audio runs ahead, so each shot is heard in time however loaded the machine.
        let impacts = [1.5, 5.0, 8.5]
        let sink = AnnouncementGatedSink(expected: impacts.count)
        let runner = try Self.session(tmp.sub("out"), impacts: impacts, seconds: 10, sinks: [sink])
        let report = try runner.run()
        #expect(report.errors.isEmpty, "\(report.errors)")
        #expect(report.clips.count == impacts.count)
        // The sink was prepared while capture ran, and its first delivery began only once every clip had been minted
        // and announced.
        #expect(sink.framesSeenWhenPrepared >= 30)
        #expect(sink.deliveredAfterAnnouncements == [3, 3, 3])
        // Every clip confirmed: no fragment stays pinned.
        let ring = try FragmentRing(
            directory: tmp.sub("out/ring"),
            configuration: SessionLayout.ringConfiguration(capacity: 6, fileExtension: "ts"))
        #expect(ring.pins.isEmpty)
    }
}
