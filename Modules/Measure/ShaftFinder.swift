import Foundation

/// Finds the club shaft in a frame's luma: the bright, thin line of a swing seen side-on. Pixels at least
/// `threshold` above the frame's median brightness, outside the top band (the frame counter) and the bottom band (the
/// ball), are fitted with their principal axis (brightness-weighted), which gives the shaft's angle from vertical and
/// its centre. Made for E-M2's question — how much does compression move the shaft? — so what matters is that it sees
/// every frame the same way; on a real camera's picture it wants a shaft brighter than its background.
public struct ShaftFinder: Sendable {
    public struct Shaft: Sendable, Equatable {
        /// Degrees from pointing straight down, positive towards +x (the synthetic script's convention).
        public var degrees: Double
        public var centreX: Double
        public var centreY: Double
        public var pixels: Int
    }

    public var threshold: Int
    /// Rows ignored at the top and bottom, as fractions of the height.
    public var topBand: Double
    public var bottomBand: Double
    /// Fewer pixels than this is no shaft.
    public var minimumPixels: Int

    public init(threshold: Int = 120, topBand: Double = 1.0 / 12, bottomBand: Double = 0.1, minimumPixels: Int = 20) {
        self.threshold = threshold
        self.topBand = topBand
        self.bottomBand = bottomBand
        self.minimumPixels = minimumPixels
    }

    /// The shaft in a luma plane, or nil when too few pixels stand out.
    public func find(luma: UnsafeRawBufferPointer, width: Int, height: Int, stride: Int) -> Shaft? {
        // The background level: the median of a coarse sample (noise and flat pictures alike).
        var histogram = [Int](repeating: 0, count: 256)
        var samples = 0
        for y in Swift.stride(from: 0, to: height, by: 8) {
            for x in Swift.stride(from: 0, to: width, by: 8) {
                histogram[Int(luma[y * stride + x])] += 1
                samples += 1
            }
        }
        var median = 0
        var seen = 0
        while median < 255, seen + histogram[median] < samples / 2 {
            seen += histogram[median]
            median += 1
        }
        let cut = min(250, median + threshold)
        let y0 = Int(Double(height) * topBand)
        let y1 = height - Int(Double(height) * bottomBand)
        var sw = 0.0
        var sx = 0.0
        var sy = 0.0
        var sxx = 0.0
        var syy = 0.0
        var sxy = 0.0
        var n = 0
        for y in y0..<max(y0, y1) {
            let row = y * stride
            for x in 0..<width {
                let v = Int(luma[row + x])
                guard v >= cut else { continue }
                let w = Double(v - cut + 1)
                let fx = Double(x)
                let fy = Double(y)
                sw += w
                sx += w * fx
                sy += w * fy
                sxx += w * fx * fx
                syy += w * fy * fy
                sxy += w * fx * fy
                n += 1
            }
        }
        guard n >= minimumPixels, sw > 0 else { return nil }
        let mx = sx / sw
        let my = sy / sw
        let cxx = sxx / sw - mx * mx
        let cyy = syy / sw - my * my
        let cxy = sxy / sw - mx * my
        // The principal axis: the eigenvector of the larger eigenvalue of [[cxx, cxy], [cxy, cyy]].
        let theta = 0.5 * atan2(2 * cxy, cxx - cyy)  // angle of the axis from +x
        var dx = cos(theta)
        var dy = sin(theta)
        if dy < 0 {
            dx = -dx
            dy = -dy
        }
        return Shaft(degrees: atan2(dx, dy) * 180 / .pi, centreX: mx, centreY: my, pixels: n)
    }
}

/// One bitrate of a sweep: how far the shaft found in the decoded frames strays from the lossless reference (and from
/// the truth, where the source knows it).
public struct SweepPoint: Sendable, Equatable, Codable {
    public var bitrateBps: Int
    public var frames: Int
    public var angleRMSEDegrees: Double
    public var positionRMSEPixels: Double
    public var angleRMSEVsTruthDegrees: Double?
    public var bytesPerSecond: Double
    public var missing: Int

    public init(
        bitrateBps: Int, frames: Int, angleRMSEDegrees: Double, positionRMSEPixels: Double,
        angleRMSEVsTruthDegrees: Double?,
        bytesPerSecond: Double, missing: Int
    ) {
        self.bitrateBps = bitrateBps
        self.frames = frames
        self.angleRMSEDegrees = angleRMSEDegrees
        self.positionRMSEPixels = positionRMSEPixels
        self.angleRMSEVsTruthDegrees = angleRMSEVsTruthDegrees
        self.bytesPerSecond = bytesPerSecond
        self.missing = missing
    }
}

public enum BitrateSweep {
    /// The difference of two line angles, degrees in −90…90: a line has no direction, so 89° and −89° are 2° apart.
    public static func axialDifference(_ a: Double, _ b: Double) -> Double {
        var d = (a - b).truncatingRemainder(dividingBy: 180)
        if d > 90 { d -= 180 }
        if d < -90 { d += 180 }
        return d
    }

    /// How far a found shaft's line passes from the reference shaft's centre, pixels: where the shaft is, across it (a
    /// centre sliding along the shaft as its faint ends come and go is not a different shaft).
    public static func offset(_ f: ShaftFinder.Shaft, from r: ShaftFinder.Shaft) -> Double {
        let rad = f.degrees * .pi / 180
        let (dx, dy) = (sin(rad), cos(rad))
        return abs((r.centreX - f.centreX) * dy - (r.centreY - f.centreY) * dx)
    }

    /// RMSE of `found` against `reference`, frame by frame: the angle (axial) and the offset across the shaft (frames
    /// where either has no shaft are counted as missing).
    public static func compare(_ found: [ShaftFinder.Shaft?], to reference: [ShaftFinder.Shaft?]) -> (
        angle: Double, position: Double, missing: Int
    ) {
        var a = 0.0
        var p = 0.0
        var n = 0
        var missing = 0
        for (f, r) in zip(found, reference) {
            guard let f, let r else {
                missing += 1
                continue
            }
            let d = axialDifference(f.degrees, r.degrees)
            a += d * d
            let o = offset(f, from: r)
            p += o * o
            n += 1
        }
        missing += abs(found.count - reference.count)
        guard n > 0 else { return (.infinity, .infinity, missing) }
        return ((a / Double(n)).squareRoot(), (p / Double(n)).squareRoot(), missing)
    }

    /// The lowest bitrate whose shaft stays within the bounds of the lossless reference (and finds it in every frame
    /// the reference does), or nil when none does.
    public static func lowestWithin(_ points: [SweepPoint], angleBound: Double, positionBound: Double) -> SweepPoint? {
        points.sorted { $0.bitrateBps < $1.bitrateBps }
            .first { $0.angleRMSEDegrees <= angleBound && $0.positionRMSEPixels <= positionBound && $0.missing == 0 }
    }

    /// The sweep as a small SVG: angle RMSE (and position RMSE) against bitrate, log scale, the bound drawn.
    public static func svg(_ points: [SweepPoint], angleBound: Double, chosen: SweepPoint?, title: String) -> String {
        let w = 640.0
        let h = 360.0
        let left = 60.0
        let right = 20.0
        let top = 40.0
        let bottom = 50.0
        let sorted = points.sorted { $0.bitrateBps < $1.bitrateBps }
        guard let lo = sorted.first, let hi = sorted.last else { return "<svg xmlns='http://www.w3.org/2000/svg'/>" }
        let lx0 = log10(Double(lo.bitrateBps))
        let lx1 = max(lx0 + 0.01, log10(Double(hi.bitrateBps)))
        let ymax = max(angleBound * 2, sorted.map(\.angleRMSEDegrees).filter(\.isFinite).max() ?? 1) * 1.1
        func x(_ b: Int) -> Double { left + (log10(Double(b)) - lx0) / (lx1 - lx0) * (w - left - right) }
        func y(_ v: Double) -> Double { top + (1 - min(v, ymax) / ymax) * (h - top - bottom) }
        var s =
            "<svg xmlns='http://www.w3.org/2000/svg' width='\(Int(w))' height='\(Int(h))' font-family='sans-serif' font-size='12'>"
        s += "<rect width='100%' height='100%' fill='white'/>"
        s += "<text x='\(left)' y='20' font-size='14'>\(title.replacingOccurrences(of: "<", with: "&lt;"))</text>"
        s +=
            "<line x1='\(left)' y1='\(h - bottom)' x2='\(w - right)' y2='\(h - bottom)' stroke='black'/><line x1='\(left)' y1='\(top)' x2='\(left)' y2='\(h - bottom)' stroke='black'/>"
        s +=
            "<line x1='\(left)' y1='\(y(angleBound))' x2='\(w - right)' y2='\(y(angleBound))' stroke='#c33' stroke-dasharray='4 3'/>"
        s +=
            "<text x='\(w - right - 150)' y='\(y(angleBound) - 4)' fill='#c33'>bound \(String(format: "%.2f", angleBound))°</text>"
        let path = sorted.map {
            "\(String(format: "%.1f", x($0.bitrateBps))),\(String(format: "%.1f", y($0.angleRMSEDegrees)))"
        }.joined(separator: " ")
        s += "<polyline fill='none' stroke='#236' stroke-width='2' points='\(path)'/>"
        for p in sorted {
            s +=
                "<circle cx='\(String(format: "%.1f", x(p.bitrateBps)))' cy='\(String(format: "%.1f", y(p.angleRMSEDegrees)))' r='4' fill='\(p == chosen ? "#c33" : "#236")'/>"
            s +=
                "<text x='\(String(format: "%.1f", x(p.bitrateBps) - 14))' y='\(h - bottom + 18)'>\(String(format: "%g", Double(p.bitrateBps) / 1e6))M</text>"
        }
        s += "<text x='\(w / 2 - 60)' y='\(h - 12)'>bitrate (log scale)</text>"
        s += "<text x='12' y='\(top - 8)'>shaft angle RMSE vs lossless, °</text></svg>"
        return s
    }
}
