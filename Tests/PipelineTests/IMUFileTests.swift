import Foundation
import Glibc
import IMUFile
import Pipeline
import TestSupport
import Testing

@Suite("file.imu: a recorded IMU, read as written or refused by line and column")
struct IMUFileTests {
    let tmp = TemporaryDirectory("ppc-imu-file")

    func file(_ text: String, _ name: String = "imu.csv") -> String {
        let path = tmp.sub(name)
        #expect(FileManager.default.createFile(atPath: path, contents: Data(text.utf8)))
        return path
    }

    func all(_ source: IMUFileSource) throws -> [IMUSample] {
        var out: [IMUSample] = []
        while let s = try source.next() { out.append(s) }
        return out
    }

    @Test func samplesAreReadInTheHeadersOrderAndUnits() throws {
        // A phone's log: a comment, columns in its own order with one more, Windows line ends, g and degrees.
        let text =
            "# exported 2026-12-02\r\nlabel, gz,gy,gx,timeSeconds,az,ay,ax\r\n\r\nswing,0,0,180,0.000,1,0,0\r\nswing,0,90,0,0.010,0.5,0,0\r\nend,0,0,0,0.020,1,0,-1"
        let s = try IMUFileSource(
            path: file(text), offsetNs: 5_000_000_000, acceleration: .g, rotation: .degreesPerSecond)
        let samples = try all(s)
        #expect(s.rateHz == 100)
        #expect(samples.map(\.timeNs) == [5_000_000_000, 5_010_000_000, 5_020_000_000])
        #expect(
            abs(samples[0].rotationRate.x - Float.pi) < 1e-5 && abs(samples[1].rotationRate.y - Float.pi / 2) < 1e-5)
        #expect(abs(samples[0].acceleration.z - 9.80665) < 1e-5 && abs(samples[2].acceleration.x + 9.80665) < 1e-5)

        // Integer nanoseconds are read exactly, up to 2^60 (a Double would round them past 2^53).
        let big = (1 << 60) - 1
        let exact = try all(
            IMUFileSource(
                path: file(
                    "timeNs,ax,ay,az,gx,gy,gz\n\(big - 1_000_000),0,0,9.81,0,0,0\n\(big),0,0,9.81,0,0,0\n", "big.csv")))
        #expect(exact.map(\.timeNs) == [Int64(big - 1_000_000), Int64(big)])
    }

    @Test func aLongRecordingIsStreamedNotReadWhole() throws {
        // 200 000 lines (about 6 MB) pass through a 64 KiB buffer, in order, every one.
        var text = "timeNs,ax,ay,az,gx,gy,gz\n"
        for i in 0..<200_000 { text += "\(i * 1_000_000),0,0,9.81,\(i % 7),0,0\n" }
        var n = 0
        var last = Int64.min
        var sum: Float = 0
        let s = try IMUFileSource(path: file(text))
        while let x = try s.next() {
            #expect(x.timeNs > last)
            last = x.timeNs
            sum += x.rotationRate.x
            n += 1
        }
        #expect(n == 200_000 && s.rateHz == 1000 && last == 199_999_000_000)
    }

    @Test(arguments: [
        ("", "imu.csv: no header line"),
        ("# only a comment\n", "imu.csv: no header line"),
        ("time,ax,ay,az,gx,gy,gz\n", "imu.csv:1: the header names no time column"),
        ("timeNs,timeSeconds,ax,ay,az,gx,gy,gz\n", "imu.csv:1: the header names two time columns"),
        ("timeNs,ax,ay,az,gx,gy\n", "imu.csv:1: the header has no column 'gz'"),
        ("timeNs,ax,ax,ay,az,gx,gy,gz\n", "imu.csv:1: column 'ax' appears 2 times"),
        ("timeNs,ax,ay,az,gx,gy,gz\n0,0,0,9.8,0,0\n", "imu.csv:2: 6 field(s) where the header names 7"),
        ("timeNs,ax,ay,az,gx,gy,gz\n0,0,0,9.8,0,0,0,0\n", "imu.csv:2: 8 field(s) where the header names 7"),
        ("timeNs,ax,ay,az,gx,gy,gz\n0,0,0,nan,0,0,0\n", "imu.csv:2: az 'nan': not a number"),
        ("timeNs,ax,ay,az,gx,gy,gz\n0,0,0,inf,0,0,0\n", "imu.csv:2: az 'inf': not a number"),
        ("timeNs,ax,ay,az,gx,gy,gz\n0,0,0,0x10,0,0,0\n", "imu.csv:2: az '0x10': not a number"),
        ("timeNs,ax,ay,az,gx,gy,gz\n0,0,0,1e999,0,0,0\n", "imu.csv:2: az '1e999': not a number"),
        ("timeNs,ax,ay,az,gx,gy,gz\n0,0,0,,0,0,0\n", "imu.csv:2: az '': empty"),
        ("timeNs,ax,ay,az,gx,gy,gz\n0,1-2,0,9.8,0,0,0\n", "imu.csv:2: ax '1-2': not a number"),
        (
            "timeNs,ax,ay,az,gx,gy,gz\n0,0,0,9.8,20000,0,0\n",
            "imu.csv:2: gx '20000': beyond any inertial sensor's range"
        ),
        ("timeNs,ax,ay,az,gx,gy,gz\n1.5,0,0,9.8,0,0,0\n", "imu.csv:2: timeNs '1.5': not a whole number of nanoseconds"),
        (
            "timeNs,ax,ay,az,gx,gy,gz\n99999999999999999999,0,0,9.8,0,0,0\n",
            "imu.csv:2: timeNs '99999999999999999999': not a whole number of nanoseconds within ±2^60"
        ),
        (
            "timeNs,ax,ay,az,gx,gy,gz\n1152921504606846977,0,0,9.8,0,0,0\n",
            "imu.csv:2: timeNs '1152921504606846977': out of range (±2^60 ns)"
        ),
        (
            "timeSeconds,ax,ay,az,gx,gy,gz\n1e12,0,0,9.8,0,0,0\n",
            "imu.csv:2: timeSeconds 1000000000000.0 is out of range (±2^60 ns)"
        ),
        (
            "timeNs,ax,ay,az,gx,gy,gz\n10,0,0,9.8,0,0,0\n10,0,0,9.8,0,0,0\n",
            "imu.csv:3: timeNs goes back or stands still (10 ns after 10 ns)"
        ),
        ("timeNs,ax,ay,az,gx,gy,gz\n0,0,0,9.8,0,0,0\n1000,0,0,9.8,0,0,0\n", "samples 1000 ns apart (1000000 Hz"),
        (
            "timeNs,ax,ay,az,gx,gy,gz\n" + String(repeating: "1", count: 5000),
            "imu.csv:2: a line longer than 4096 bytes"
        ),
    ])
    func whatCannotBeReadIsRefusedByLineAndColumn(_ text: String, _ said: String) throws {
        let path = file(text)
        let error = #expect(throws: IMUFileError.self) { _ = try all(IMUFileSource(path: path)) }
        #expect(
            error?.description.hasPrefix(tmp.path) == true && error?.description.contains(said) == true,
            "\(error?.description ?? "none")")
    }

    /// Issue 33: only the first 17 samples were judged, so 17 at 10 kHz then 1 MHz was taken (5.2 million samples in a
    /// 6 s session). The rate holds for the whole file, within twice what it began at and never past 10 kHz.
    @Test func theRateHoldsForTheWholeFileNotItsStart() throws {
        var text = "timeNs,ax,ay,az,gx,gy,gz\n"
        var t = 0
        for _ in 0..<17 {
            text += "\(t),0,0,9.8,0,0,0\n"
            t += 100_000  // 10 kHz
        }
        for _ in 0..<100 {
            text += "\(t),0,0,9.8,0,0,0\n"
            t += 1_000  // 1 MHz
        }
        let error = #expect(throws: IMUFileError.self) { _ = try all(IMUFileSource(path: file(text, "burst.csv"))) }
        #expect(
            error?.description.contains("burst.csv:") == true && error?.description.contains("above 10000 Hz") == true,
            "\(error?.description ?? "none")")

        // 100 Hz at the start, then 250 Hz: past twice the rate the session sized its ring for.
        var slow = "timeNs,ax,ay,az,gx,gy,gz\n"
        t = 0
        for i in 0..<80 {
            slow += "\(t),0,0,9.8,0,0,0\n"
            t += i < 40 ? 10_000_000 : 4_000_000
        }
        let faster = #expect(throws: IMUFileError.self) { _ = try all(IMUFileSource(path: file(slow, "faster.csv"))) }
        #expect(
            faster?.description.contains("more than twice the 100 Hz the file began at") == true,
            "\(faster?.description ?? "none")")

        // Jitter within twice the rate is a real logger's, and read.
        var jitter = "timeNs,ax,ay,az,gx,gy,gz\n"
        t = 0
        for i in 0..<200 {
            jitter += "\(t),0,0,9.8,0,0,0\n"
            t += i % 2 == 0 ? 6_000_000 : 14_000_000
        }
        #expect(try all(IMUFileSource(path: file(jitter, "jitter.csv"))).count == 200)
    }

    @Test func aFolderOrAFIFOIsNamedNotWaitedOn() throws {
        let fifo = tmp.sub("fifo.csv")
        #expect(mkfifo(fifo, 0o600) == 0)
        for path in [tmp.path, fifo, tmp.sub("missing.csv")] {
            let error = #expect(throws: IMUFileError.self) { _ = try IMUFileSource(path: path) }
            #expect(error?.description.hasPrefix(path) == true, "\(error?.description ?? "none")")
        }
    }

    @Test func offsetPastTheRangeIsRefused() throws {
        let path = file("timeNs,ax,ay,az,gx,gy,gz\n1152921504606846976,0,0,9.8,0,0,0\n")
        let error = #expect(throws: IMUFileError.self) { _ = try IMUFileSource(path: path, offsetNs: 1) }
        #expect(
            error?.description.contains("plus offsetNs 1 is out of range") == true, "\(error?.description ?? "none")")
    }
}
