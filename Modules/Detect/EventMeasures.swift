import Foundation

/// What the detector measures of one event once it is decided: the onset to the sample, the attack, how the tail rings
/// and how many modes ring in it, and whether it repeats a voice period. Per event, never per sample; no allocation.
extension ImpactDetector {
    /// Samples from `onset` until the 8-sample energy of the high-passed signal first reaches half its largest value
    /// within the next 128 samples (at 48 kHz; scaled with the rate).
    func attackSamples(from onset: Int64, fraction: Double = 0.5) -> Int {
        let span = Int64(maxAttack * 6)
        let end = min(sample, onset + span)
        guard end - onset > 8, sample - onset < Int64(historyMask) else { return 0 }
        @inline(__always) func x2(_ k: Int64) -> Double {
            let v = Double(history[Int(k) & historyMask])
            return v * v
        }
        var run = 0.0
        for k in onset..<(onset + 8) { run += x2(k) }
        var peak = run
        var k = onset + 8
        while k < end {
            run += x2(k) - x2(k - 8)
            peak = max(peak, run)
            k += 1
        }
        run = 0
        for k in onset..<(onset + 8) { run += x2(k) }
        if run >= peak * fraction { return 0 }
        k = onset + 8
        while k < end {
            run += x2(k) - x2(k - 8)
            if run >= peak * fraction { return Int(k - onset - 7) }
            k += 1
        }
        return Int(end - onset)
    }

    /// How many modes ring: 10·log10 of the residual energy of the best 2nd-order linear predictor over that of the
    /// best 12th-order one, both fitted by least squares (the covariance method) to the high-passed signal from 6 to 198
    /// samples after the onset (at 48 kHz; scaled with the rate). A sum of k decaying sinusoids is predicted exactly by
    /// order 2k, so several modes leave the 12th-order residual at the noise while the 2nd-order one keeps all but one
    /// mode (a head: 4–28 dB); noise through a single resonance is predicted no better by 12 than by 2 (a tap, a bounce,
    /// a clap: under 3 dB). A voice's pulse rings several formants and scores like a head — `repetition(at:)` tells it.
    /// Per event, not per sample; no allocation (scratch from `init`).
    func modesDb(from onset: Int64) -> Double {
        let p = Self.modesOrder
        let n = modesLength
        let from = onset + Int64(modesOffset)
        modesFittedAt = nil
        guard from + Int64(n) <= sample, sample - from < Int64(historyMask) else { return 0 }
        let x = modesWindow
        for k in 0..<n { x[k] = Double(history[Int(from + Int64(k)) & historyMask]) }
        // Normal equations R·a = r over the targets x[p..<n]: R[i][j] = Σ x[t−1−i]·x[t−1−j], r[i] = Σ x[t]·x[t−1−i].
        let m = modesMatrix  // p rows of p + 1: R, then r in the last column
        var energy = 0.0
        for t in p..<n { energy += x[t] * x[t] }
        guard energy > 0 else { return 0 }
        for i in 0..<p {
            for j in i..<p {
                var c = 0.0
                for t in p..<n { c += x[t - 1 - i] * x[t - 1 - j] }
                m[i * (p + 1) + j] = c
                m[j * (p + 1) + i] = c
            }
            var c = 0.0
            for t in p..<n { c += x[t] * x[t - 1 - i] }
            m[i * (p + 1) + p] = c
        }
        let (db, factored) = choleskyResidualRatioDb(m, p: p, energy: energy)
        if factored {
            solvePredictor(m, p: p)
            modesFittedAt = onset
        }
        return db
    }

    /// The order-`p` predictor's coefficients into `modesCoefficients`, by back substitution (Lᵀ·a = z) in the factor
    /// `choleskyResidualRatioDb` left in `m`.
    func solvePredictor(_ m: UnsafeMutablePointer<Double>, p: Int) {
        let w = p + 1
        var i = p - 1
        while i >= 0 {
            var s = m[i * w + p]
            for k in (i + 1)..<p { s -= m[k * w + i] * modesCoefficients[k] }
            modesCoefficients[i] = s / m[i * w + i]
            i -= 1
        }
    }

    /// How impulsive the excitation is: the residual of the ring's own order-12 predictor (fitted by `modesDb(from:)` to
    /// 6–198 samples after the onset) from 48 samples before the onset to the end of that stretch; its largest 6-sample
    /// energy starting from 8 samples before the onset to 15 after it, over the median 6-sample energy, dB (at 48 kHz;
    /// scaled with the rate). A struck head is an impulse through its modes: the predictor takes the modes and leaves the
    /// impulse standing over the room's noise (RoomCorpus's impacts: a median of 29 dB clean). Noise through a resonance
    /// (a bounce, a tap, a clap) leaves noise all along (95 % under 9 dB). A burst of noise is how ImpactCorpus makes an
    /// impact (a median of 10 dB), so this only ever admits an event, never refuses one. Per event; no allocation. 0 when
    /// no predictor was fitted after `onset`.
    func impulseDb(at onset: Int64) -> Double {
        let p = Self.modesOrder
        let from = onset - Int64(impulseBefore)
        let n = impulseBefore + impulseAfter
        guard modesFittedAt == onset, from + Int64(n) <= sample, sample - (from - Int64(p)) < Int64(historyMask) else {
            return 0
        }
        @inline(__always) func x(_ k: Int64) -> Double { Double(history[Int(k) & historyMask]) }
        let r = impulseScratch
        for j in 0..<n {
            let t = from + Int64(j)
            var e = x(t)
            for i in 0..<p { e -= modesCoefficients[i] * x(t - 1 - Int64(i)) }
            r[j] = e * e
        }
        // 6-sample sums, in place: r[j] becomes the sum of r[j..<j + w].
        let w = impulseWindow
        let windows = n - w + 1
        var run = 0.0
        for j in 0..<w { run += r[j] }
        for j in 0..<windows {
            let first = r[j]
            let next = j + w < n ? r[j + w] : 0
            r[j] = run
            run += next - first
        }
        var spike = 0.0
        for j in (impulseBefore - impulseLead)...(impulseBefore + impulseLag) { spike = max(spike, r[j]) }
        var sums = UnsafeMutableBufferPointer(start: r, count: windows)
        sums.sort()
        let median = sums[windows / 2]
        return 10 * log10(max(spike, 1e-30) / max(median, 1e-30))
    }

    /// 10·log10(residual of order 2 / residual of order `p`) from the normal equations in `m` (p rows of p + 1), by one
    /// in-place Cholesky factorisation: the leading 2×2 block of the factor is the order-2 factor. `factored`: whether
    /// the factorisation ran to the end (the factor and L⁻¹·r are then in `m`).
    func choleskyResidualRatioDb(_ m: UnsafeMutablePointer<Double>, p: Int, energy: Double) -> (
        db: Double, factored: Bool
    ) {
        let w = p + 1
        var trace = 0.0
        for i in 0..<p { trace += m[i * w + i] }
        let load = max(trace, 1e-30) * 1e-9
        // Factor R = L·Lᵀ in the lower triangle, and solve L·z = r alongside; the residual of order q is
        // energy − Σ_{i<q} z[i]².
        var explained = 0.0
        var explained2 = 0.0
        for i in 0..<p {
            for j in 0...i {
                var s = m[i * w + j] + (i == j ? load : 0)
                for k in 0..<j { s -= m[i * w + k] * m[j * w + k] }
                if i == j {
                    guard s > 0 else { return (0, false) }
                    m[i * w + i] = s.squareRoot()
                } else {
                    m[i * w + j] = s / m[j * w + j]
                }
            }
            var z = m[i * w + p]
            for k in 0..<i { z -= m[i * w + k] * m[k * w + p] }
            z /= m[i * w + i]
            m[i * w + p] = z
            explained += z * z
            if i == 1 { explained2 = explained }
        }
        let floor = energy * 1e-12
        return (10 * log10(max(energy - explained2, floor) / max(energy - explained, floor)), true)
    }

    /// How closely the 2 ms from the onset repeat what sounded one voice period earlier: the largest normalised
    /// correlation between them and the same stretch 160–600 samples before (a voice's pitch, 80–300 Hz, at 48 kHz;
    /// scaled with the rate). A voice's glottal pulse rings its formants like the pulse before it; a struck head's onset
    /// follows the room's noise.
    func repetition(at onset: Int64) -> Double {
        let scale = Double(settings.sampleRate) / 48_000
        let w = max(16, Int(96 * scale))
        let minLag = max(w, Int(160 * scale))
        let maxLag = max(minLag + 1, Int(600 * scale))
        guard onset + Int64(w) <= sample, sample - (onset - Int64(maxLag)) < Int64(historyMask) else { return 0 }
        @inline(__always) func x(_ k: Int64) -> Double { Double(history[Int(k) & historyMask]) }
        var e0 = 0.0
        for k in 0..<w { e0 += x(onset + Int64(k)) * x(onset + Int64(k)) }
        guard e0 > 0 else { return 0 }
        // The earlier stretch's energy, slid one sample at a time.
        var e1 = 0.0
        for k in 0..<w { e1 += x(onset - Int64(minLag) + Int64(k)) * x(onset - Int64(minLag) + Int64(k)) }
        var best = 0.0
        for lag in minLag...maxLag {
            let from = onset - Int64(lag)
            if lag > minLag {
                // Moving one sample earlier: add the new first sample, drop the old last one.
                let add = x(from)
                let drop = x(from + Int64(w))
                e1 += add * add - drop * drop
            }
            var c = 0.0
            for k in 0..<w { c += x(onset + Int64(k)) * x(from + Int64(k)) }
            if e1 > 0 { best = max(best, c / (e0 * max(e1, 1e-30)).squareRoot()) }
        }
        return best
    }

    /// How dark the event is: the mean block energy it adds above 200 Hz against what it adds above 2 kHz, dB — its
    /// first `darkWindowBlocks` blocks (~7 ms) from the trigger, against the `darkBeforeBlocks` (~48 ms) that end
    /// `darkGapBlocks` before it. What was already sounding (a fan, a converter's offset) cancels out; hum, rumble and a
    /// thud's fundamental lie under 200 Hz, where their energy would swing from block to block with their phase. At least 0;
    /// nil when nothing was added above 2 kHz or too little was heard before. Per event, from the per-block ring.
    func darkDb() -> Double? {
        let mask = Self.blockRingMask
        let start = eventTriggerBlock
        let end = min(start + Self.darkWindowBlocks, blocksSeen + 1)
        let beforeEnd = start - Self.darkGapBlocks
        let beforeStart = max(beforeEnd - Self.darkBeforeBlocks, 1, blocksSeen - mask)
        guard end > start, beforeEnd - beforeStart >= Self.darkBeforeBlocks / 2 else { return nil }
        func mean(_ ring: UnsafeMutablePointer<Double>, _ from: Int, _ to: Int) -> Double {
            var sum = 0.0
            for k in from..<to { sum += ring[k & mask] }
            return sum / Double(to - from)
        }
        let added2k = mean(blockRing2k, start, end) - mean(blockRing2k, beforeStart, beforeEnd)
        let addedAll = mean(blockRingAll, start, end) - mean(blockRingAll, beforeStart, beforeEnd)
        guard added2k > 0 else { return nil }
        return 10 * log10(max(addedAll, added2k) / added2k)
    }
    static let darkWindowBlocks = 10
    static let darkGapBlocks = 3
    static let darkBeforeBlocks = 72

    /// How periodic the high-passed tail is: the largest normalised autocorrelation at lags of 4…48 samples (12 kHz down
    /// to 1 kHz at 48 kHz; scaled with the rate) over 2–10 ms after the trigger. A head's modes ring (0.55–0.8); noise
    /// does not (under 0.45).
    func modality() -> Double {
        let scale = Double(settings.sampleRate) / 48_000
        let from = eventTriggerBlockStart + Int64(96 * scale)
        let to = min(sample, eventTriggerBlockStart + Int64(480 * scale))
        let n = Int(to - from)
        let minLag = max(2, Int(4 * scale))
        let maxLag = max(minLag + 1, Int(48 * scale))
        guard n > maxLag * 2, sample - from < Int64(historyMask) else { return 0 }
        @inline(__always) func x(_ k: Int) -> Double { Double(history[Int(from + Int64(k)) & historyMask]) }
        var mean = 0.0
        for k in 0..<n { mean += x(k) }
        mean /= Double(n)
        var energy = 0.0
        for k in 0..<n { energy += (x(k) - mean) * (x(k) - mean) }
        guard energy > 0 else { return 0 }
        var best = -1.0
        for lag in minLag...maxLag {
            var c = 0.0
            for k in 0..<(n - lag) { c += (x(k) - mean) * (x(k + lag) - mean) }
            best = max(best, c / energy)
        }
        return best
    }

    /// The onset: the AIC change point of the high-passed signal in [trigger block − 4 blocks, peak block end].
    func refineOnset() -> Int64 {
        let peakEnd = eventTriggerBlockStart + Int64((eventPeakBlock + 1) * blockSize)
        let from = max(sample - Int64(historyMask), eventTriggerBlockStart - Int64(4 * blockSize), 0)
        let to = min(peakEnd, sample)
        let n = Int(to - from)
        guard n > 8 else { return eventTriggerBlockStart }
        // AIC(k) = k·ln(var(x[0..<k])) + (n−k)·ln(var(x[k..<n])), from prefix sums of squares (means ≈ 0 after the
        // high-pass). The onset is the first sample of the second segment.
        var total: Double = 0
        for i in 0..<n {
            let v = Double(history[Int(from + Int64(i)) & historyMask])
            total += v * v
        }
        var best = 0
        var bestAIC = Double.infinity
        var left: Double = 0
        for k in 1..<(n - 1) {
            let v = Double(history[Int(from + Int64(k - 1)) & historyMask])
            left += v * v
            let right = total - left
            let aic =
                Double(k) * log(max(left / Double(k), 1e-30)) + Double(n - k) * log(max(right / Double(n - k), 1e-30))
            if aic < bestAIC {
                bestAIC = aic
                best = k
            }
        }
        // AIC lands where the variance changes most, a few samples into a ramped rise; walk back while a 3-sample
        // energy stays clearly above the noise before the event (estimated from the window's first two blocks).
        var noise: Double = 0
        let quiet = min(best, 2 * blockSize)
        for i in 0..<quiet {
            let v = Double(history[Int(from + Int64(i)) & historyMask])
            noise += v * v
        }
        noise = max(noise / Double(max(1, quiet)), 1e-20)
        func energy3(_ k: Int) -> Double {
            var e: Double = 0
            for j in max(0, k - 1)...min(n - 1, k + 1) {
                let v = Double(history[Int(from + Int64(j)) & historyMask])
                e += v * v
            }
            return e / 3
        }
        var onset = best
        while onset > quiet + 1, energy3(onset - 1) > noise * settings.onsetWalkbackRatio { onset -= 1 }
        guard settings.rampRefinement else { return from + Int64(onset) }
        return from + Int64(rampOnset(near: onset, n: n, from: from, noise: noise))
    }

    /// A quiet impact's first samples lie under the noise, so the walk-back stops late. The rise is modelled instead:
    /// before the onset k0 the samples are noise (variance σ²); from k0 to the rise's end their variance grows as
    /// σ² + c·(k − k0 + 1)² — a linear amplitude ramp, c fitted by least squares for each k0 — and the k0 with the
    /// highest Gaussian likelihood over one fixed stretch is the onset. Measured on unseen corpus seeds before it was
    /// kept (see the README).
    func rampOnset(near guess: Int, n: Int, from: Int64, noise: Double) -> Int {
        @inline(__always) func x2(_ k: Int) -> Double {
            let v = Double(history[Int(from + Int64(k)) & historyMask])
            return v * v
        }
        let lo = max(1, guess - settings.rampSearchSamples)
        let hi = min(n - 2, guess + 2)
        guard hi > lo else { return guess }
        // The rise ends where the magnitude peaks within the longest rise the model allows.
        var end = guess
        var peak = 0.0
        for k in guess..<min(n, guess + settings.rampMaxSamples) where x2(k) > peak {
            peak = x2(k)
            end = k
        }
        let start = max(0, lo - 8)
        var best = guess
        var bestLL = -Double.infinity
        for k0 in lo...min(hi, end) {
            var num = 0.0
            var den = 0.0
            for k in k0...end {
                let t = Double(k - k0 + 1)
                num += (x2(k) - noise) * t * t
                den += t * t * t * t
            }
            let c = max(0, num / max(den, 1e-30))
            var ll = 0.0
            for k in start..<k0 { ll -= log(noise) + x2(k) / noise }
            for k in k0...end {
                let t = Double(k - k0 + 1)
                let v = noise + c * t * t
                ll -= log(v) + x2(k) / v
            }
            if ll > bestLL {
                bestLL = ll
                best = k0
            }
        }
        return best
    }
}
