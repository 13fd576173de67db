import Foundation
import Synthetic
import Syscall
import TestSupport
import Testing

@testable import Link

@Suite("Link wire: every message round-trips; bad input is refused with a reason")
struct WireTests {
    static let all: [LinkMessage] = [
        .preview(frameIndex: 42, timeNs: 1_000_000, width: 4, height: 2, luma: [1, 2, 3, 4, 5, 6, 7, 8]),
        .hello(protocolVersion: 1, deviceID: "bay-3", channel: .bulk, captureProfile: "1920x1080@120 h264"),
        .helloAck(
            accepted: false, policy: "pinpoint-studio",
            reason: "360 lines is below what ingest policy 'pinpoint-studio' takes"),
        .heartbeat(sequence: 7, deviceTimeNs: -5), .heartbeatAck(sequence: 7, hostTimeNs: 99),
        .syncProbe(sequence: 1, t1: 10), .syncReply(sequence: 1, t1: 10, t2: 20, t3: 21),
        .relationUpdate(offsetNs: -123, skewPpm: 12.5, uncertaintyNs: 40_000, samples: 16),
        .candidate(id: 3, t0Ns: 5, score: 0.75), .shot(id: 3, t0Ns: 5),
        .announce(clipID: "s-001", totalBytes: 1 << 40, files: 4),
        .interruption(id: 1, startNs: 2, durationNs: 3, reason: "device lost"), .bye(reason: "stopped"),
        .offer(clipID: "s-001", file: "clip.mp4", size: 42, xxh3: .max),
        .resumeAt(clipID: "s-001", file: "clip.mp4", offset: 10),
        .chunk(offset: 10, xxh3: 1, compressed: true, data: [1, 2, 3]), .chunkAck(committedOffset: 13),
        .fileComplete(clipID: "s-001", file: "clip.mp4", verified: true, reason: ""), .clipDone(clipID: "s-001"),
        .clipConfirmed(clipID: "s-001", path: "/lib/bay-3/s-001"),
    ]

    @Test(arguments: WireTests.all)
    func roundTrip(m: LinkMessage) throws {
        let frame = m.encoded()
        let (type, length) = try LinkMessage.header(Array(frame[0..<8]))
        #expect(length == frame.count - 8)
        #expect(try LinkMessage.decode(type: type, payload: Array(frame[8...])) == m)
    }

    @Test func malformedFramesAreRefusedWithAReason() throws {
        let good = LinkMessage.shot(id: 1, t0Ns: 2).encoded()
        var v2 = good
        v2[0] = 2
        #expect(throws: LinkError.self) { try LinkMessage.header(Array(v2[0..<8])) }
        var unknown = good
        unknown[1] = 99
        #expect(throws: LinkError.self) { try LinkMessage.header(Array(unknown[0..<8])) }
        var oversize = good
        oversize[4] = 0xFF
        oversize[5] = 0xFF
        do {
            _ = try LinkMessage.header(Array(oversize[0..<8]))
            Issue.record("oversize accepted")
        } catch { #expect(error.code == .oversize && error.reason.contains("limit")) }
        #expect(throws: LinkError.self) { try LinkMessage.decode(type: 9, payload: Array(good[8..<12])) }  // truncated
        // leftover
        #expect(throws: LinkError.self) { try LinkMessage.decode(type: 9, payload: Array(good[8...]) + [0]) }
        #expect(throws: LinkError.self) { try LinkMessage.decode(type: 12, payload: [2, 0, 0xFF, 0xFE]) }  // not UTF-8
        // A preview claiming more pixels than a preview may have is refused before its bytes are read.
        var big = LinkMessage.preview(
            frameIndex: 1, timeNs: 2, width: 4, height: 2, luma: [UInt8](repeating: 0, count: 8)
        ).encoded()
        big[8 + 16] = 0xFF
        big[8 + 17] = 0xFF
        do {
            _ = try LinkMessage.decode(type: 30, payload: Array(big[8...]))
            Issue.record("oversize preview accepted")
        } catch { #expect(error.code == .oversize, "\(error)") }
    }
}

@Suite("ClockRelation: NTP arithmetic, min-delay burst, regression for skew")
struct ClockTests {
    @Test func recoversAnInjectedOffsetAndSkewWithAnHonestBound() {
        var est = ClockEstimator()
        var rng = SplitMix64(seed: 42)  // deterministic: the same delays every run
        let trueOffset: Int64 = 5_000_000  // host − device, ns
        let skew = 20e-6  // host gains 20 µs per s
        var device: Int64 = 1_000_000_000
        for _ in 0..<400 {
            let up = Int64.random(in: 40_000...400_000, using: &rng)
            let down = Int64.random(in: 40_000...400_000, using: &rng)
            let t1 = device
            let hostAt = { (d: Int64) in d + trueOffset + Int64(skew * Double(d - 1_000_000_000)) }
            let t2 = hostAt(t1 + up)
            let t3 = t2 + 10_000
            let t4 = t1 + up + 10_000 + down
            est.add(SyncSample(t1: t1, t2: t2, t3: t3, t4: t4))
            device += 50_000_000
        }
        let r = est.relation!
        let truthAtRef = trueOffset + Int64(skew * Double(r.referenceDeviceNs - 1_000_000_000))
        #expect(
            abs(r.offsetNs - truthAtRef) <= r.uncertaintyNs,
            "offset \(r.offsetNs) vs \(truthAtRef) ± \(r.uncertaintyNs)")
        #expect(r.skewKnown)
        #expect(abs(r.skewPpm - 20) < 2, "skew \(r.skewPpm) ppm")
        #expect(r.uncertaintyNs >= 40_000)  // half the best delay: never claims better than the path allows
    }

    @Test func skewIsNotClaimedOverATooShortSpan() {
        var est = ClockEstimator()
        for i in 0..<50 {
            est.add(
                SyncSample(
                    t1: Int64(i) * 100_000, t2: Int64(i) * 100_000 + 7_000, t3: Int64(i) * 100_000 + 8_000,
                    t4: Int64(i) * 100_000 + 12_000))
        }
        #expect(est.relation?.skewKnown == false)
        #expect(est.relation?.skewPpm == 0)
    }

    @Test func aSingleSampleIsPlainNTP() {
        let s = SyncSample(t1: 100, t2: 1_150, t3: 1_160, t4: 220)
        #expect(s.offsetNs == 995)
        #expect(s.delayNs == 110)
    }
}

extension LinkMessage: CustomTestStringConvertible {
    public var testDescription: String { name }
}

/// Issue 13: what a careless or hostile peer sends is refused with a reason; no clip is lost, overwritten or confirmed
/// half-received, and the host keeps serving.

@Suite("CaptureProfile: one parser for WxH@FPS")
struct CaptureProfileTests {
    @Test(arguments: [
        ("1920x1080@120 h264", CaptureProfile(width: 1920, height: 1080, framesPerSecond: 120, codec: "h264")),
        ("640x360@59.94", CaptureProfile(width: 640, height: 360, framesPerSecond: 59.94)),
    ])
    func parsesWhatADeviceAndAPersonWrite(text: String, expected: CaptureProfile) {
        #expect(CaptureProfile(text) == expected)
        #expect(CaptureProfile(expected.description) == expected)
    }

    @Test(arguments: [
        "", "1920x1080", "1920x1080@", "x1080@120", "1920x1080@0", "1920x1080@nan", "-1x5@30", "1x2x3@4",
        "333x333@30@5",
    ])
    func refusesWhatDoesNotStateAMode(text: String) {
        #expect(CaptureProfile(text) == nil)
    }
}

@Suite("Connection: a host that never answers costs the connect timeout, not the kernel's two minutes")
struct ConnectTimeoutTests {
    @Test func aHostThatNeverAnswersIsGivenUpAfterTheTimeoutWithTheReason() throws {
        let silent = try SilentListener()
        let error = #expect(throws: LinkError.self) {
            _ = try Connection.connect(host: "127.0.0.1", port: silent.port, channel: .control, timeoutNs: 200_000_000)
        }
        #expect(
            error?.reason.contains("127.0.0.1:\(silent.port): no answer within 0.2 s (link.connectTimeoutNs)") == true,
            "\(String(describing: error))")
    }

    @Test func aTimeoutIsNotRetriedLikeARefusal() throws {
        // Retrying a refusal reaches a host that is starting; retrying a host that never answers costs the timeout
        // again, `attempts` times over.
        let silent = try SilentListener()
        let error = #expect(throws: LinkError.self) {
            _ = try Connection.connect(
                host: "127.0.0.1", port: silent.port, channel: .control, attempts: 6, timeoutNs: 200_000_000)
        }
        #expect(error?.reason.contains("no answer within") == true, "\(String(describing: error))")
        #expect(error?.reason.contains("attempts") == false)
    }

    @Test func aHostThatAnswersIsConnectedAndTheSocketBlocksAgain() throws {
        let listener = try Listener(host: "127.0.0.1", port: 0)
        let c = try Connection.connect(
            host: "127.0.0.1", port: listener.port, channel: .control, timeoutNs: 2_000_000_000)
        let flags = fcntl(c.fd, F_GETFL)
        #expect(flags & O_NONBLOCK == 0)
    }
}

/// A host is reached by its name as well as its address: a studio PC keeps its name when DHCP gives it a new address.
@Suite("Connection: a host by name")
struct HostNameTests {
    @Test func aHostIsReachedByName() throws {
        let listener = try Listener(host: "127.0.0.1", port: 0)
        let c = try Connection.connect(
            host: "localhost", port: listener.port, channel: .control, timeoutNs: 2_000_000_000)
        #expect(c.peer == "localhost:\(listener.port)")
        #expect(Socket.describe(try Socket.lookupIPv4("localhost", 7600)) == "127.0.0.1:7600")
        // an address is itself
        #expect(Socket.describe(try Socket.lookupIPv4("192.168.1.10", 7600)) == "192.168.1.10:7600")
    }

    @Test func aNameThatIsNotFoundIsSaidWithTheResolversReason() {
        let error = #expect(throws: LinkError.self) {
            _ = try Connection.connect(host: "no-such-host.invalid", port: 7600, channel: .control)
        }
        #expect(
            error?.reason.hasPrefix("connect no-such-host.invalid:7600: cannot find no-such-host.invalid: ") == true,
            "\(String(describing: error))")
    }
}
