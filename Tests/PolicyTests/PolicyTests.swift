import Foundation
import Policy
import Synchronization
import TestSupport
import Testing

/// A /sys/class/thermal written by the test: zones with temperatures and (optionally) trip points.
struct FakeThermal {
    let dir: TemporaryDirectory
    init() { dir = TemporaryDirectory("ppc-thermal") }

    func zone(_ n: Int, celsius: Double, trips: [(String, Double)] = []) throws {
        let z = dir.sub("thermal_zone\(n)")
        try FileManager.default.createDirectory(atPath: z, withIntermediateDirectories: true)
        try "\(Int(celsius * 1000))\n".write(toFile: "\(z)/temp", atomically: false, encoding: .utf8)
        for (k, t) in trips.enumerated() {
            try "\(t.0)\n".write(toFile: "\(z)/trip_point_\(k)_type", atomically: false, encoding: .utf8)
            try "\(Int(t.1 * 1000))\n".write(toFile: "\(z)/trip_point_\(k)_temp", atomically: false, encoding: .utf8)
        }
    }

    var sensor: ThermalSensor {
        ThermalSensor(root: dir.path, fairCelsius: 70, seriousCelsius: 85, criticalCelsius: 95)
    }
}

@Suite("Policy: thermal levels from sysfs, a ladder with history, what yields, the storage floor")
struct PolicyTests {
    @Test func aZoneIsJudgedByItsOwnTripPointsAndTheHottestZoneWins() throws {
        let t = FakeThermal()
        try t.zone(0, celsius: 50, trips: [("passive", 80), ("critical", 100)])
        try t.zone(1, celsius: 72, trips: [("passive", 80), ("critical", 100)])
        var r = try #require(t.sensor.read())
        #expect(r.level == .fair && r.zone == "thermal_zone1", "\(r)")
        #expect(r.basis.contains("passive 80.0"))
        try t.zone(1, celsius: 81, trips: [("passive", 80), ("critical", 100)])
        r = try #require(t.sensor.read())
        #expect(r.level == .serious)
        try t.zone(0, celsius: 101, trips: [("passive", 80), ("critical", 100)])
        r = try #require(t.sensor.read())
        #expect(r.level == .critical && r.zone == "thermal_zone0")
    }

    @Test func withoutTripPointsTheAssumedThresholdsApplyAndWithoutZonesNothingIsClaimed() throws {
        let t = FakeThermal()
        #expect(t.sensor.read() == nil)
        try t.zone(0, celsius: 86)
        let r = try #require(t.sensor.read())
        #expect(r.level == .serious && r.basis.contains("policy.seriousCelsius"))
    }

    @Test func oneHotReadingIsTransientSeveralArePersistentAndCriticalPausesBoth() {
        var ladder = ThermalLadder(window: 5, persistent: 3)
        #expect(ladder.add(.nominal).0 == .full)
        #expect(ladder.add(.serious).0 == .transferPaused)
        #expect(ladder.add(.fair).0 == .full)
        #expect(ladder.add(.serious).0 == .transferPaused)
        let (s, why) = ladder.add(.serious)
        #expect(s == .transferAndMintPaused && why.contains("persistent"), "\(why)")
        #expect(ladder.add(.nominal).0 == .full)
        var fresh = ThermalLadder(window: 5, persistent: 3)
        #expect(fresh.add(.critical).0 == .transferAndMintPaused)
    }

    func monitor(_ t: FakeThermal, free: Int64 = 100 << 30, rss: Int64 = 10 << 20) -> PolicyMonitor {
        var s = PolicyMonitor.Settings(
            sampleIntervalNs: 1_000_000_000, sensor: t.sensor, historyWindow: 5, persistentSerious: 3,
            outputDirectory: t.dir.path,
            storageFloorBytes: 1 << 30, memoryBudgetBytes: 1 << 30)
        s.freeBytes = { _ in free }
        s.residentBytes = { rss }
        return PolicyMonitor(s)
    }

    @Test func theMonitorRecordsEachChangeCountsWarningsAndTellsTheTimeline() throws {
        let t = FakeThermal()
        try t.zone(0, celsius: 40)
        let m = monitor(t)
        let seen = Mutex<[ThermalLevel]>([])
        m.onThermal = { r in seen.withLock { $0.append(r.level) } }
        m.sample()
        #expect(m.stance == .full)
        try t.zone(0, celsius: 90)
        m.sample()
        #expect(m.stance == .transferPaused)
        m.sample()
        m.sample()
        #expect(m.stance == .transferAndMintPaused)
        try t.zone(0, celsius: 40)
        m.sample()
        #expect(m.stance == .full)
        #expect(m.warnings.thermal == 1)
        #expect(seen.withLock { $0 } == [.nominal, .serious, .nominal])
        let kinds = m.history.map(\.kind)
        #expect(kinds.filter { $0 == .stance }.count == 3, "\(m.history.map(\.sentence))")
        #expect(m.thermal.peakCelsius == 90)
    }

    @Test func belowTheStorageFloorASessionRefusesToArmAndSaysWhy() throws {
        let t = FakeThermal()
        let low = monitor(t, free: 512 << 20)
        let why = try #require(low.armRefusal())
        #expect(
            why.contains("refusing to arm") && why.contains("512.0 MiB") && why.contains("device.storageFloorBytes"),
            "\(why)")
        #expect(monitor(t).armRefusal() == nil)
        low.sample()
        #expect(low.warnings.storage == 1)
    }

    @Test func memoryOverItsBudgetIsAWarningOncePerCrossing() throws {
        let t = FakeThermal()
        let m = monitor(t, rss: 2 << 30)
        m.sample()
        m.sample()
        #expect(m.warnings.memory == 1)
        #expect(m.history.first { $0.kind == .memory }?.sentence.contains("above the budget") == true)
    }
}
