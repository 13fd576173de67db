import Foundation
import Pipeline
import TestSupport
import Testing
import V4L2
import V4L2Source

/// Selection and errors without a device: the rules `capture card` and the `v4l2` plugin follow.
@Suite("V4L2 mode selection and errors, without a device")
struct ModeSelectionTests {
    func mode(_ input: Int, _ fourcc: FourCC, _ w: Int, _ h: Int, fps: UInt32, den: UInt32 = 1, signal: Bool = false)
        -> CaptureMode
    {
        CaptureMode(
            input: input, inputName: "in\(input)", fourcc: fourcc, width: w, height: h,
            interval: FrameInterval(numerator: den, denominator: fps * den), fromSignal: signal)
    }

    @Test func frameRateRanksBeforeResolutionSoAHugeSlowModeNeverWins() {
        let modes = [
            mode(0, .yuyv, 4032, 3024, fps: 1),  // a stills-like mode: most pixels, lowest rate
            mode(0, .yuyv, 1920, 1080, fps: 30),
            mode(0, .yuyv, 1280, 720, fps: 120),
            mode(0, .yuyv, 640, 480, fps: 120),
        ]
        let (chosen, why) = ModeSelection.choose(modes)
        #expect(chosen == mode(0, .yuyv, 1280, 720, fps: 120))
        #expect(why.contains("highest frame rate"), "\(why)")
        #expect(why.contains("4032x3024 is larger but only 1 fps"), "\(why)")
    }

    @Test func atEqualRateTheLargerHeightThenTheLowerInputThenNV12Wins() {
        let modes = [
            mode(1, .nv12, 1920, 1080, fps: 60),
            mode(0, .yuyv, 1920, 1080, fps: 60),
            mode(0, .nv12, 1920, 1080, fps: 60),
            mode(0, .nv12, 1280, 720, fps: 60),
        ]
        #expect(
            ModeSelection.rank(modes).map { "\($0.input) \($0.fourcc) \($0.height)" } == [
                "0 NV12 1080", "0 YUYV 1080", "1 NV12 1080", "0 NV12 720",
            ])
        let (chosen, why) = ModeSelection.choose(modes)
        #expect(chosen?.fourcc == .nv12)
        #expect(why.contains("without conversion"), "\(why)")
    }

    @Test func nTSCRateCountsAsTheSameRateSoTheLargerPictureWins() {
        let a = mode(0, .nv12, 1280, 720, fps: 60)
        let b = CaptureMode(
            input: 0, inputName: "in0", fourcc: .nv12, width: 1920, height: 1080,
            interval: FrameInterval(numerator: 1001, denominator: 60000))
        #expect(ModeSelection.choose([a, b]).mode == b, "59.94 and 60 fps are one rate; 1080 lines beat 720")
        let c = mode(0, .nv12, 640, 480, fps: 120)
        #expect(ModeSelection.choose([a, b, c]).mode == c, "120 fps is a different rate and ranks first")
    }

    @Test func constraintsNarrowAndAnImpossibleOneSaysWhatIsOffered() {
        let modes = [
            mode(0, .yuyv, 1280, 720, fps: 60), mode(0, .yuyv, 320, 180, fps: 30), mode(1, .nv12, 640, 480, fps: 30),
        ]
        #expect(ModeSelection.choose(modes, ModeConstraints(width: 320, height: 180)).mode == modes[1])
        #expect(ModeSelection.choose(modes, ModeConstraints(input: 1)).mode == modes[2])
        let none = ModeSelection.choose(modes, ModeConstraints(framesPerSecond: 240))
        #expect(none.mode == nil)
        #expect(none.why.contains("no mode matches 240 fps"), "\(none.why)")
        #expect(none.why.contains("1280x720@60"), "\(none.why)")
    }

    @Test func formatsPpcCannotTakeAreNeverChosenAndTheReasonSaysSo() {
        let h264 = mode(0, FourCC("H264"), 1920, 1080, fps: 60)
        let (chosen, why) = ModeSelection.choose([h264])
        #expect(chosen == nil)
        #expect(why.contains("H264") && why.contains("NV12") && why.contains("MJPEG"), "\(why)")
    }

    /// A USB camera offering 1080p120 as MJPEG and YUYV, on a machine whose encoder cannot take 1080p120: the
    /// self-test figure decides, and the reason names both figures.
    @Test func motionJPEGWinsAtEqualRankOnlyWhenTheRawModeCannotBeEncodedInTime() {
        let modes = [
            mode(0, .yuyv, 1920, 1080, fps: 120), mode(0, .mjpeg, 1920, 1080, fps: 120),
            mode(0, .yuyv, 640, 360, fps: 120),
        ]
        // Nothing measured: raw first, and the reason says MJPEG was there and how to decide.
        let unmeasured = ModeSelection.choose(modes)
        #expect(unmeasured.mode == modes[0])
        #expect(
            unmeasured.why.contains("MJPEG is offered too") && unmeasured.why.contains("selftest"), "\(unmeasured.why)")
        // A machine that sustained 27.6 Mpx/s: 1080p120 raw needs 248.8 — the camera's own compression wins.
        let slow = EncodeCapacity(
            pixelsPerSecond: 27.6e6, provenance: "measured", what: "x264 ultrafast 640x360@120, selftest")
        let chosen = ModeSelection.choose(modes, capacity: slow)
        #expect(chosen.mode == modes[1])
        #expect(
            chosen.why.contains("passed through") && chosen.why.contains("248.8 Mpx/s")
                && chosen.why.contains("27.6 Mpx/s"), "\(chosen.why)")
        #expect(chosen.why.contains("measured: x264"), "\(chosen.why)")
        // A machine fast enough keeps the raw mode.
        let fast = EncodeCapacity(pixelsPerSecond: 400e6, provenance: "measured", what: "x264, selftest")
        #expect(ModeSelection.choose(modes, capacity: fast).mode == modes[0])
        // Frame rate still ranks first: a raw 240 fps mode beats MJPEG at 120 whatever the capacity (and is warned about).
        let faster = modes + [mode(0, .yuyv, 640, 360, fps: 240)]
        let pick = ModeSelection.choose(
            faster, capacity: EncodeCapacity(pixelsPerSecond: 20e6, provenance: "measured", what: "x"))
        #expect(pick.mode == faster[3])
        #expect(pick.why.contains("warning"), "\(pick.why)")
    }

    @Test func theEncodeCapacityRecordIsReadBackAndABadOneIgnored() throws {
        let tmp = TemporaryDirectory("ppc-capacity")
        let path = tmp.sub("state/ppc/encode-capacity.json")
        #expect(EncodeCapacity.load(path) == nil)
        let c = EncodeCapacity(pixelsPerSecond: 31.5e6, provenance: "measured", what: "x264 ultrafast 640x360@120 nv12")
        try c.save(path)
        #expect(EncodeCapacity.load(path) == c)
        try Data(#"{"pixelsPerSecond": -1, "provenance": "measured", "what": "x"}"#.utf8).write(
            to: URL(fileURLWithPath: path))
        #expect(EncodeCapacity.load(path) == nil)
    }

    @Test func fourCCNamesBigEndianVariants() {
        #expect(FourCC.nv12.description == "NV12")
        #expect(FourCC(rawValue: FourCC("AR15").rawValue | 0x8000_0000).description == "AR15-BE")
        #expect(FourCC("Y16").description == "Y16")
    }

    @Test func aMissingDeviceIsAClearErrorNamingIt() {
        let err = #expect(throws: V4L2Error.self) { try V4L2Device(path: "/dev/video-ppc-missing") }
        #expect(err?.kind == .notFound)
        #expect("\(err.map { "\($0)" } ?? "")".contains("/dev/video-ppc-missing"))
    }

    @Test func aNodeThatIsNotAV4L2DeviceIsRefusedWithTheReason() {
        let err = #expect(throws: V4L2Error.self) { try V4L2Device(path: "/dev/null") }
        let said = err.map { "\($0)" } ?? ""
        #expect(err?.kind == .unsupported, "\(said)")
        #expect(said.contains("/dev/null") && said.contains("QUERYCAP"), "\(said)")
    }

    @Test func thePluginReportsAMissingCameraThroughTheRegistry() throws {
        let registry = try PluginRegistry([V4L2Source.factory])
        var values: [String: JSONValue] = [:]
        for p in V4L2Source.factory.descriptor.parameters { values[p.name] = p.defaultValue }
        values["device"] = .string("/dev/video-ppc-missing")
        let e = #expect(throws: (any Error).self) {
            try registry.make(
                VideoSource.self, named: "v4l2", kinds: [.videoSource], parameters: PluginParameters(values),
                config: .defaults)
        }
        #expect("\(e.map { "\($0)" } ?? "")".contains("/dev/video-ppc-missing: open: no such video device"))
    }
}
