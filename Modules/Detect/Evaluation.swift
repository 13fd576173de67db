import Foundation

/// Scores detections against truth: one-to-one matching within a tolerance, precision, recall, F, onset errors.
public struct DetectionScore: Sendable, Equatable {
    public var truePositives = 0
    public var falsePositives = 0
    public var falseNegatives = 0
    /// Signed onset errors (detected − true), samples, of the matched pairs.
    public var errors: [Int64] = []

    public init() {}

    public var precision: Double {
        truePositives + falsePositives == 0 ? 1 : Double(truePositives) / Double(truePositives + falsePositives)
    }
    public var recall: Double {
        truePositives + falseNegatives == 0 ? 1 : Double(truePositives) / Double(truePositives + falseNegatives)
    }
    public var f: Double { precision + recall == 0 ? 0 : 2 * precision * recall / (precision + recall) }

    /// Median, 95th percentile and maximum of |error|, and the median signed error, in samples.
    public var errorStatistics: (medianAbs: Double, p95Abs: Double, maxAbs: Double, medianSigned: Double) {
        guard !errors.isEmpty else { return (0, 0, 0, 0) }
        let abs = errors.map { Swift.abs(Double($0)) }.sorted()
        let signed = errors.map(Double.init).sorted()
        func median(_ a: [Double]) -> Double {
            a.count % 2 == 1 ? a[a.count / 2] : (a[a.count / 2 - 1] + a[a.count / 2]) / 2
        }
        return (
            median(abs), abs[min(abs.count - 1, Int((Double(abs.count) * 0.95).rounded(.up)) - 1)], abs.last!,
            median(signed)
        )
    }

    /// Adds one file's result: detections and truth matched one to one, nearest first, within `tolerance` samples.
    /// Returns, for each truth onset in order, whether a detection matched it.
    @discardableResult
    public mutating func add(detected: [Int64], truth: [Int64], tolerance: Int64) -> [Bool] {
        var pairs: [(d: Int, t: Int, distance: Int64)] = []
        for (i, d) in detected.enumerated() {
            for (j, t) in truth.enumerated() where Swift.abs(d - t) <= tolerance {
                pairs.append((i, j, Swift.abs(d - t)))
            }
        }
        pairs.sort { ($0.distance, $0.d, $0.t) < ($1.distance, $1.d, $1.t) }
        var usedD = Set<Int>()
        var usedT = Set<Int>()
        for p in pairs where !usedD.contains(p.d) && !usedT.contains(p.t) {
            usedD.insert(p.d)
            usedT.insert(p.t)
            errors.append(detected[p.d] - truth[p.t])
        }
        truePositives += usedD.count
        falsePositives += detected.count - usedD.count
        falseNegatives += truth.count - usedT.count
        return truth.indices.map { usedT.contains($0) }
    }

    public static func + (a: DetectionScore, b: DetectionScore) -> DetectionScore {
        var s = a
        s.truePositives += b.truePositives
        s.falsePositives += b.falsePositives
        s.falseNegatives += b.falseNegatives
        s.errors += b.errors
        return s
    }
}

/// How far a labelled impact stands over the room's noise where the detector listens, so that a score can say how many
/// of its misses no listener going by level could hear: the loudest 0.67 ms block (32 samples at 48 kHz) of the signal
/// above 2 kHz that starts within 2 ms of the onset, against the median block of the half second before the onset, dB.
/// The median is the room's steady noise (a fan, hum, the converter); a louder sound's tail just before is not counted
/// against the impact here, so this is the most an impact can stand out, not what the detector saw.
public enum ImpactProminence {
    /// The bins `detect eval` reports recall in: up to (not including) each bound, dB. The first holds the impacts that
    /// could not be measured.
    public static let bins: [(label: String, below: Double)] = [
        ("not measured (within 0.5 s of the file's start or end)", -.greatestFiniteMagnitude),
        ("under 6 dB", 6), ("6–10 dB", 10), ("10–20 dB", 20), ("20 dB or more", .infinity),
    ]

    /// The bin of `decibels` in `bins`.
    public static func bin(_ decibels: Double) -> Int { bins.firstIndex { decibels < $0.below } ?? bins.count - 1 }

    /// Each onset's prominence, dB (`-infinity` for an onset too near the start or the end to measure).
    public static func decibels(samples: [Float], sampleRate: Int, onsets: [Int64]) -> [Double] {
        let block = ImpactDetector.samples(32, at: Double(sampleRate), least: 8)  // the detector's block
        let reach = ImpactDetector.samples(96, at: Double(sampleRate), least: 0)  // 2 ms
        let before = Int(0.5 * Double(sampleRate))
        var hp = Biquad(highPassAt: 2000, sampleRate: Double(sampleRate))
        let y = samples.map { Double(hp.step($0)) }
        func energy(_ start: Int) -> Double {
            var e = 0.0
            for k in start..<(start + block) { e += y[k] * y[k] }
            return e / Double(block)
        }
        return onsets.map { t in
            let onset = Int(t)
            guard onset - before >= 0, onset + reach + block <= y.count else { return -.infinity }
            var peak = 0.0
            for start in (onset - block / 2)...(onset + reach) { peak = max(peak, energy(start)) }
            var room = stride(from: onset - block - before, through: onset - 2 * block, by: block).map(energy)
            room.sort()
            let median = room.isEmpty ? 0 : room[room.count / 2]
            return 10 * log10(max(peak, 1e-30) / max(median, 1e-30))
        }
    }
}
