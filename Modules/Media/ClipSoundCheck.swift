/// Where a clip's sound track really puts a sound: decoded from clip.mp4 as a player decodes it (libavformat honours
/// the MP4's edit list, libavcodec drops the encoder's priming), and matched against the samples it was made from.
public enum ClipSoundCheck {
    /// How far the track's copy of the moment at `expectedNs` (on the clip's timeline) lies from it: positive when the
    /// track plays it late. `original` is the sound the track was made from, `index` the (fractional) sample of it that
    /// belongs at `expectedNs`. The copy is found by normalised cross-correlation of 20 ms around it, searched ±10 ms,
    /// refined between samples by a parabola through the peak. nil when the track holds no clear copy (silence there,
    /// or a correlation under 0.5).
    public static func offsetNs(clip path: String, original: [Float], index: Double, sampleRate: Int, expectedNs: Int64)
        throws(MediaError) -> Int64?
    {
        let (decoded, rate, firstNs) = try MediaReader.wholeAudioTimed(path)
        guard rate == sampleRate, rate > 0 else { return nil }
        let half = rate / 100  // 10 ms each side
        let search = rate / 100
        let k0 = Int(index.rounded())
        guard k0 - half >= 0, k0 + half <= original.count else { return nil }
        let reference = Array(original[(k0 - half)..<(k0 + half)])
        let refEnergy = reference.reduce(0) { $0 + Double($1) * Double($1) }
        guard refEnergy > 1e-9 else { return nil }
        // Where the decoded track should hold sample k0, as a fractional index into `decoded`.
        let expected = Double(expectedNs - firstNs) * Double(rate) / 1e9 + (Double(k0) - index)
        let e0 = Int(expected.rounded())
        var scores: [Double] = []
        for lag in -search...search {
            let start = e0 + lag - half
            guard start >= 0, start + 2 * half <= decoded.count else {
                scores.append(-1)
                continue
            }
            var dot = 0.0
            var energy = 0.0
            for i in 0..<(2 * half) {
                let d = Double(decoded[start + i])
                dot += d * Double(reference[i])
                energy += d * d
            }
            scores.append(energy > 0 ? dot / (refEnergy * energy).squareRoot() : -1)
        }
        guard let best = scores.indices.max(by: { scores[$0] < scores[$1] }), scores[best] >= 0.5 else { return nil }
        var peak = Double(best)
        if best > 0, best < scores.count - 1 {
            let (a, b, c) = (scores[best - 1], scores[best], scores[best + 1])
            let denominator = a - 2 * b + c
            if denominator < 0 { peak += 0.5 * (a - c) / denominator }
        }
        let lagSamples = peak - Double(search) + (Double(e0) - expected)
        return Int64((lagSamples * 1e9 / Double(rate)).rounded())
    }
}
