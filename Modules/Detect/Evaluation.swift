/// Scores detections against truth: one-to-one matching within a tolerance, precision, recall, F, onset errors.
public struct DetectionScore: Sendable, Equatable {
    public var truePositives = 0
    public var falsePositives = 0
    public var falseNegatives = 0
    /// Signed onset errors (detected − true), samples, of the matched pairs.
    public var errors: [Int64] = []

    public init() {}

    public var precision: Double { truePositives + falsePositives == 0 ? 1 : Double(truePositives) / Double(truePositives + falsePositives) }
    public var recall: Double { truePositives + falseNegatives == 0 ? 1 : Double(truePositives) / Double(truePositives + falseNegatives) }
    public var f: Double { precision + recall == 0 ? 0 : 2 * precision * recall / (precision + recall) }

    /// Median, 95th percentile and maximum of |error|, and the median signed error, in samples.
    public var errorStatistics: (medianAbs: Double, p95Abs: Double, maxAbs: Double, medianSigned: Double) {
        guard !errors.isEmpty else { return (0, 0, 0, 0) }
        let abs = errors.map { Swift.abs(Double($0)) }.sorted()
        let signed = errors.map(Double.init).sorted()
        func median(_ a: [Double]) -> Double { a.count % 2 == 1 ? a[a.count / 2] : (a[a.count / 2 - 1] + a[a.count / 2]) / 2 }
        return (median(abs), abs[min(abs.count - 1, Int((Double(abs.count) * 0.95).rounded(.up)) - 1)], abs.last!, median(signed))
    }

    /// Adds one file's result: detections and truth matched one to one, nearest first, within `tolerance` samples.
    public mutating func add(detected: [Int64], truth: [Int64], tolerance: Int64) {
        var pairs: [(d: Int, t: Int, distance: Int64)] = []
        for (i, d) in detected.enumerated() {
            for (j, t) in truth.enumerated() where Swift.abs(d - t) <= tolerance { pairs.append((i, j, Swift.abs(d - t))) }
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
