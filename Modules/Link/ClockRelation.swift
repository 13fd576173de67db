import Syscall

/// One sync exchange: the device sends at t1 (device clock), the host receives at t2 and replies at t3 (host clock),
/// the device receives at t4. All ns.
public struct SyncSample: Sendable, Equatable {
    public var t1: Int64
    public var t2: Int64
    public var t3: Int64
    public var t4: Int64

    public init(t1: Int64, t2: Int64, t3: Int64, t4: Int64) {
        self.t1 = t1
        self.t2 = t2
        self.t3 = t3
        self.t4 = t4
    }

    /// NTP on-wire: host − device, assuming symmetric paths.
    public var offsetNs: Int64 { ((t2 - t1) + (t3 - t4)) / 2 }
    /// Round trip minus the host's own processing time.
    public var delayNs: Int64 { (t4 - t1) - (t3 - t2) }
    /// The device time the offset refers to (the middle of the exchange).
    public var deviceMidNs: Int64 { t1 + (t4 - t1) / 2 }
}

/// How a device's capture clock maps to a host's: `host = device + offset + skew × (device − reference)`.
public struct ClockRelation: Sendable, Equatable {
    public var offsetNs: Int64
    /// Parts per million the device clock runs slow relative to the host (positive: host gains).
    public var skewPpm: Double
    /// An honest bound on the offset error: half the largest delay among the exchanges the offset rests on (the worst
    /// path asymmetry those delays allow) — the faster half's, whose largest is the median delay.
    public var uncertaintyNs: Int64
    public var samples: Int
    /// The device time `offsetNs` is stated at.
    public var referenceDeviceNs: Int64
    /// Whether the samples span long enough (≥ ``ClockEstimator/minimumSkewSpanNs``) for skew to mean anything;
    /// when false `skewPpm` is 0 and says nothing.
    public var skewKnown: Bool = false

    public func hostTime(ofDevice t: Int64) -> Int64 {
        t + offsetNs + Int64((skewPpm * 1e-6 * Double(t - referenceDeviceNs)).rounded())
    }
}

extension ClockRelation {
    /// A relation as a device reports it to its host (`relation_update`): the offset, skew and uncertainty the host
    /// reads a device's times through, and how many exchanges they rest on. No reference time crosses the wire: the host
    /// adds the offset, as the device stated it at its latest exchange.
    public struct Report: Sendable, Equatable {
        public var offsetNs: Int64
        public var skewPpm: Double
        public var uncertaintyNs: Int64
        public var samples: UInt32

        public init(offsetNs: Int64, skewPpm: Double, uncertaintyNs: Int64, samples: UInt32) {
            self.offsetNs = offsetNs
            self.skewPpm = skewPpm
            self.uncertaintyNs = uncertaintyNs
            self.samples = samples
        }

        /// A device time on the host clock (nil when the sum would not fit: no reading of a clock).
        public func hostTime(ofDevice t: Int64) -> Int64? {
            let (sum, overflow) = t.addingReportingOverflow(offsetNs)
            return overflow ? nil : sum
        }
    }

    /// What a device reports of this relation.
    public var report: Report {
        Report(offsetNs: offsetNs, skewPpm: skewPpm, uncertaintyNs: uncertaintyNs, samples: UInt32(clamping: samples))
    }
}

/// Estimates a ``ClockRelation`` from sync samples: after a burst on connect, the median offset of the faster half of
/// the exchanges; once they span long enough, a least-squares line through them gives offset and skew.
public struct ClockEstimator: Sendable {
    public private(set) var samples: [SyncSample] = []
    /// Keep at most this many (the oldest are dropped): a sliding window.
    public let capacity: Int

    public init(capacity: Int = 512) { self.capacity = capacity }

    /// Skew is fitted only over at least this span: 20 ppm over 5 ms is 0.1 µs, far below a loopback's jitter.
    public static let minimumSkewSpanNs: Int64 = 2_000_000_000

    public mutating func add(_ s: SyncSample) {
        guard s.delayNs >= 0 else { return }  // impossible timestamps (a clock stepped mid-exchange)
        samples.append(s)
        if samples.count > capacity { samples.removeFirst(samples.count - capacity) }
    }

    /// The relation from the samples so far; nil before any.
    public var relation: ClockRelation? {
        guard !samples.isEmpty else { return nil }
        // Low-delay samples only: the faster half (they carry the least path asymmetry), so one exceptionally fast
        // exchange cannot leave too few samples, all from one moment, to fit a slope through.
        let medianDelay = samples.map(\.delayNs).sorted()[samples.count / 2]
        let good = samples.filter { $0.delayNs <= medianDelay }
        let span = (good.map(\.deviceMidNs).max() ?? 0) - (good.map(\.deviceMidNs).min() ?? 0)
        guard good.count >= 8, span >= Self.minimumSkewSpanNs else {
            // No span to fit a slope over: the median offset of the faster half. One exchange delayed on one way only
            // (a thread preempted mid-reply) shifts the fastest sample's offset by up to half its delay, and the median
            // passes it over: measured 2026-12-02 over eight alternating runs of `bench link`, the fastest sample's p95
            // error was 0.43–9.8 µs (over 5 µs in three), the median's 0.38–0.65 µs. Each of these samples is off by at
            // most half its own delay, at most the median delay: half that is the bound it can honestly state.
            let median = good.sorted { $0.offsetNs < $1.offsetNs }[good.count / 2]
            return ClockRelation(
                offsetNs: median.offsetNs, skewPpm: 0, uncertaintyNs: medianDelay / 2, samples: samples.count,
                referenceDeviceNs: median.deviceMidNs)
        }
        let x0 = Double(good[good.count / 2].deviceMidNs)
        let xs = good.map { Double($0.deviceMidNs) - x0 }
        let ys = good.map { Double($0.offsetNs) }
        let mx = xs.reduce(0, +) / Double(xs.count)
        let my = ys.reduce(0, +) / Double(ys.count)
        var sxx = 0.0
        var sxy = 0.0
        for (x, y) in zip(xs, ys) {
            sxx += (x - mx) * (x - mx)
            sxy += (x - mx) * (y - my)
        }
        let slope = sxx > 0 ? sxy / sxx : 0
        // State the offset at the newest good sample's time.
        let ref = good.last!.deviceMidNs
        let offset = my + slope * (Double(ref) - x0 - mx)
        // Each fitted offset is off by at most half its own delay; the fit uses delays up to the median, so half the
        // median is the bound it can honestly state.
        return ClockRelation(
            offsetNs: Int64(offset.rounded()), skewPpm: slope * 1e6, uncertaintyNs: medianDelay / 2,
            samples: samples.count,
            referenceDeviceNs: ref, skewKnown: true)
    }
}

/// A clock that reads CLOCK_MONOTONIC plus an injected error — `offset + skew × elapsed` — so tests and benchmarks know
/// the truth a clock estimate should find. With no error it is the capture clock itself.
public struct InjectedClock: Sendable {
    public let offsetNs: Int64
    public let skewPpm: Double
    public let startNs: Int64

    public init(offsetNs: Int64 = 0, skewPpm: Double = 0, startNs: Int64 = monotonicNowNs()) {
        self.offsetNs = offsetNs
        self.skewPpm = skewPpm
        self.startNs = startNs
    }

    public func now() -> Int64 {
        let t = monotonicNowNs()
        return t + offsetNs + Int64(skewPpm * 1e-6 * Double(t - startNs))
    }
}
