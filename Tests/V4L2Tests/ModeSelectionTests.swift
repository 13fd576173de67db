import Pipeline
import TestSupport
import V4L2
import V4L2Source
import XCTest

/// Selection and errors without a device: the rules `capture card` and the `v4l2` plugin follow.
final class ModeSelectionTests: XCTestCase {
    func mode(_ input: Int, _ fourcc: FourCC, _ w: Int, _ h: Int, fps: UInt32, den: UInt32 = 1, signal: Bool = false) -> CaptureMode {
        CaptureMode(
            input: input, inputName: "in\(input)", fourcc: fourcc, width: w, height: h,
            interval: FrameInterval(numerator: den, denominator: fps * den), fromSignal: signal)
    }

    func testFrameRateRanksBeforeResolutionSoAHugeSlowModeNeverWins() {
        let modes = [
            mode(0, .yuyv, 4032, 3024, fps: 1),  // a stills-like mode: most pixels, lowest rate
            mode(0, .yuyv, 1920, 1080, fps: 30),
            mode(0, .yuyv, 1280, 720, fps: 120),
            mode(0, .yuyv, 640, 480, fps: 120),
        ]
        let (chosen, why) = ModeSelection.choose(modes)
        XCTAssertEqual(chosen, mode(0, .yuyv, 1280, 720, fps: 120))
        XCTAssertTrue(why.contains("highest frame rate"), why)
        XCTAssertTrue(why.contains("4032x3024 is larger but only 1 fps"), why)
    }

    func testAtEqualRateTheLargerHeightThenTheLowerInputThenNV12Wins() {
        let modes = [
            mode(1, .nv12, 1920, 1080, fps: 60),
            mode(0, .yuyv, 1920, 1080, fps: 60),
            mode(0, .nv12, 1920, 1080, fps: 60),
            mode(0, .nv12, 1280, 720, fps: 60),
        ]
        XCTAssertEqual(ModeSelection.rank(modes).map { "\($0.input) \($0.fourcc) \($0.height)" }, ["0 NV12 1080", "0 YUYV 1080", "1 NV12 1080", "0 NV12 720"])
        let (chosen, why) = ModeSelection.choose(modes)
        XCTAssertEqual(chosen?.fourcc, .nv12)
        XCTAssertTrue(why.contains("without conversion"), why)
    }

    func testNTSCRateCountsAsTheSameRateSoTheLargerPictureWins() {
        let a = mode(0, .nv12, 1280, 720, fps: 60)
        let b = CaptureMode(input: 0, inputName: "in0", fourcc: .nv12, width: 1920, height: 1080, interval: FrameInterval(numerator: 1001, denominator: 60000))
        XCTAssertEqual(ModeSelection.choose([a, b]).mode, b, "59.94 and 60 fps are one rate; 1080 lines beat 720")
        let c = mode(0, .nv12, 640, 480, fps: 120)
        XCTAssertEqual(ModeSelection.choose([a, b, c]).mode, c, "120 fps is a different rate and ranks first")
    }

    func testConstraintsNarrowAndAnImpossibleOneSaysWhatIsOffered() {
        let modes = [mode(0, .yuyv, 1280, 720, fps: 60), mode(0, .yuyv, 320, 180, fps: 30), mode(1, .nv12, 640, 480, fps: 30)]
        XCTAssertEqual(ModeSelection.choose(modes, ModeConstraints(width: 320, height: 180)).mode, modes[1])
        XCTAssertEqual(ModeSelection.choose(modes, ModeConstraints(input: 1)).mode, modes[2])
        let none = ModeSelection.choose(modes, ModeConstraints(framesPerSecond: 240))
        XCTAssertNil(none.mode)
        XCTAssertTrue(none.why.contains("no mode matches 240 fps"), none.why)
        XCTAssertTrue(none.why.contains("1280x720@60"), none.why)
    }

    func testFormatsPpcCannotTakeAreNeverChosenAndTheReasonSaysSo() {
        let mjpeg = mode(0, FourCC("MJPG"), 1920, 1080, fps: 60)
        let (chosen, why) = ModeSelection.choose([mjpeg])
        XCTAssertNil(chosen)
        XCTAssertTrue(why.contains("MJPG") && why.contains("NV12"), why)
    }

    func testFourCCNamesBigEndianVariants() {
        XCTAssertEqual(FourCC.nv12.description, "NV12")
        XCTAssertEqual(FourCC(rawValue: FourCC("AR15").rawValue | 0x8000_0000).description, "AR15-BE")
        XCTAssertEqual(FourCC("Y16").description, "Y16")
    }

    func testAMissingDeviceIsAClearErrorNamingIt() {
        XCTAssertThrowsError(try V4L2Device(path: "/dev/video-ppc-missing")) { e in
            let err = e as! V4L2Error
            XCTAssertEqual(err.kind, .notFound)
            XCTAssertTrue("\(err)".contains("/dev/video-ppc-missing"), "\(err)")
        }
    }

    func testANodeThatIsNotAV4L2DeviceIsRefusedWithTheReason() {
        XCTAssertThrowsError(try V4L2Device(path: "/dev/null")) { e in
            let err = e as! V4L2Error
            XCTAssertEqual(err.kind, .unsupported, "\(err)")
            XCTAssertTrue("\(err)".contains("/dev/null") && "\(err)".contains("QUERYCAP"), "\(err)")
        }
    }

    func testThePluginReportsAMissingCameraThroughTheRegistry() throws {
        let registry = try PluginRegistry([V4L2Source.factory])
        var values: [String: JSONValue] = [:]
        for p in V4L2Source.factory.descriptor.parameters { values[p.name] = p.defaultValue }
        values["device"] = .string("/dev/video-ppc-missing")
        XCTAssertThrowsError(
            try registry.make(VideoSource.self, named: "v4l2", kinds: [.videoSource], parameters: PluginParameters(values), config: .defaults)
        ) { e in
            XCTAssertTrue("\(e)".contains("v4l2: /dev/video-ppc-missing: open: no such video device"), "\(e)")
        }
    }
}
