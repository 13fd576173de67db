import Pipeline
import Testing

@testable import Synthetic

@Suite("Synthetic sources draw from one known script")
struct SyntheticTests {
    @Test(arguments: [(640, 360), (1280, 720), (1920, 1080), (160, 90)])
    func frameCounterReadsBackEveryIndex(width: Int, height: Int) {
        var plane = [UInt8](repeating: 40, count: width * height)
        for index: Int64 in [0, 1, 2, 255, 256, 65_535, 1_000_000, 4_294_967_295] {
            plane.withUnsafeMutableBufferPointer {
                FrameCounter.draw(index, into: $0.baseAddress!, width: width, height: height, stride: width)
            }
            let read = plane.withUnsafeBytes {
                FrameCounter.read(from: $0, width: width, height: height, stride: width)
            }
            #expect(read == index)
        }
    }

    @Test func aBlankFrameHasNoCounter() {
        let plane = [UInt8](repeating: 40, count: 640 * 360)
        #expect(plane.withUnsafeBytes { FrameCounter.read(from: $0, width: 640, height: 360, stride: 640) } == nil)
    }

    @Test func framesCarryTheirIndexAndExactTime() throws {
        let fmt = VideoFormat(width: 320, height: 180, framesPerSecond: 120)
        let src = SyntheticVideoSource(
            format: fmt, script: SwingScript(impactsNs: [1_000_000_000]), startNs: 5_000, seconds: 0.5)
        var buffer = [UInt8](repeating: 0, count: fmt.frameBytes)
        var count: Int64 = 0
        while let info = try buffer.withUnsafeMutableBytes({
            try src.readFrame(into: VideoFrameBuffer(contiguous: $0.baseAddress!, width: fmt.width, height: fmt.height))
        }) {
            #expect(info.index == count)
            #expect(info.timeNs == 5_000 + count * 1_000_000_000 / 120)
            #expect(
                buffer.withUnsafeBytes { FrameCounter.read(from: $0, width: 320, height: 180, stride: 320) } == count)
            count += 1
        }
        #expect(count == 60)
    }

    @Test func theBallLeavesOnTheFirstFrameAtOrAfterImpact() throws {
        let impact: Int64 = 1_004_000_000  // between frames 120 (1.0 s) and 121 (1.00833 s) at 120 fps
        let fmt = VideoFormat(width: 320, height: 180, framesPerSecond: 120)
        let src = SyntheticVideoSource(format: fmt, script: SwingScript(impactsNs: [impact]), seconds: 2)
        #expect(src.firstFrame(atOrAfter: impact) == 121)
        var buffer = [UInt8](repeating: 0, count: fmt.frameBytes)
        let r = max(2, 180 / 40)
        let ballPixel = (180 - 2 * r - 1) * 320 + 160
        var present: [Int64: Bool] = [:]
        while let info = try buffer.withUnsafeMutableBytes({
            try src.readFrame(into: VideoFrameBuffer(contiguous: $0.baseAddress!, width: fmt.width, height: fmt.height))
        }) {
            present[info.index] = buffer[ballPixel] == 250
        }
        #expect(present[120] == true)
        #expect(present[121] == false)
    }

    @Test func shaftAngleFollowsTheScript() {
        let s = SwingScript(impactsNs: [10_000_000_000])
        #expect(s.shaftDegrees(at: 0) == 0)
        #expect(s.shaftDegrees(at: 10_000_000_000 - 250_000_000) == 270)  // top of the backswing
        #expect(s.shaftDegrees(at: 10_000_000_000) == 0)  // impact: shaft at the ball
        #expect(s.shaftDegrees(at: 10_000_000_000 + 500_000_000) == -240)
    }

    @Test(arguments: [0.5, 1.0, 2.25])
    func audioImpactStartsExactlyAtTheTruthSample(seconds: Double) throws {
        let src = SyntheticAudioSource(
            sampleRate: 48_000, script: SwingScript(impactSeconds: [seconds], startNs: 0), seconds: seconds + 0.5)
        let onset = try #require(src.impactSamples.first)
        #expect(onset == Int64((seconds * 48_000).rounded()))
        var samples: [Float] = []
        var block = [Float](repeating: 0, count: 512)
        var expectedFirst: Int64 = 0
        while let b = try block.withUnsafeMutableBufferPointer({ try src.read(into: $0) }) {
            #expect(b.firstSample == expectedFirst)
            #expect(b.timeNs == b.firstSample * 1_000_000_000 / 48_000)
            expectedFirst += Int64(b.count)
            samples += block[0..<b.count]
        }
        #expect(samples.count == Int(((seconds + 0.5) * 48_000).rounded()))
        // The onset sample is at the impact level; the sample before it is whoosh and noise, far below.
        #expect(samples[Int(onset)] > 0.2)
        #expect(abs(samples[Int(onset) - 1]) < 0.05)
    }

    @Test func audioIsDeterministicPerSeed() throws {
        func render(_ seed: UInt64) throws -> [Float] {
            let src = SyntheticAudioSource(
                sampleRate: 48_000, script: SwingScript(impactsNs: []), seconds: 0.1, seed: seed)
            var out = [Float](repeating: 0, count: 4800)
            _ = try out.withUnsafeMutableBufferPointer { try src.read(into: $0) }
            return out
        }
        #expect(try render(3) == render(3))
        #expect(try render(3) != render(4))
    }

    @Test func imuRunsAtItsRate() throws {
        let src = SyntheticIMUSource(rateHz: 100, script: SwingScript(impactsNs: [500_000_000]), seconds: 1)
        var times: [Int64] = []
        while let s = try src.next() { times.append(s.timeNs) }
        #expect(times.count == 100)
        #expect(times[1] - times[0] == 10_000_000)
    }
}
