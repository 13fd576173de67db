import CALSA

/// One capture device a sound card offers, with what its hardware accepts (read from the device, not assumed).
public struct AudioCaptureDevice: Sendable, Equatable {
    /// The PCM name to open: `hw:CARD,DEV` by card id (stable across reboots, unlike the index).
    public var name: String
    public var cardIndex: Int
    public var cardID: String
    public var cardName: String
    public var deviceIndex: Int
    public var deviceName: String
    /// The common rates the hardware takes (tested one by one), Hz.
    public var rates: [Int]
    public var rateRange: ClosedRange<Int>?
    public var formats: [String]
    public var channels: ClosedRange<Int>?
    /// Why the hardware parameters could not be read (e.g. busy), or nil.
    public var problem: String?
}

/// The sound cards' capture devices, from the kernel's control interface.
public enum SoundCards {
    static let commonRates = [8000, 16000, 22050, 32000, 44100, 48000, 88200, 96000, 176400, 192000]

    /// Every capture device on every card. A card whose control device cannot be opened is skipped; a device whose
    /// parameters cannot be read (in use, say) is listed with its `problem`.
    public static func captureDevices() -> [AudioCaptureDevice] {
        ppc_alsa_silence_errors()
        var out: [AudioCaptureDevice] = []
        var card: Int32 = -1
        while snd_card_next(&card) == 0, card >= 0 {
            var ctl: OpaquePointer?
            guard snd_ctl_open(&ctl, "hw:\(card)", 0) == 0, let ctl else { continue }
            defer { snd_ctl_close(ctl) }
            var info: OpaquePointer?
            var pcmInfo: OpaquePointer?
            guard snd_ctl_card_info_malloc(&info) == 0, let info, snd_pcm_info_malloc(&pcmInfo) == 0, let pcmInfo else {
                continue
            }
            defer {
                snd_ctl_card_info_free(info)
                snd_pcm_info_free(pcmInfo)
            }
            guard snd_ctl_card_info(ctl, info) == 0 else { continue }
            let cardID = String(cString: snd_ctl_card_info_get_id(info))
            let cardName = String(cString: snd_ctl_card_info_get_name(info))
            var device: Int32 = -1
            while snd_ctl_pcm_next_device(ctl, &device) == 0, device >= 0 {
                snd_pcm_info_set_device(pcmInfo, UInt32(device))
                snd_pcm_info_set_subdevice(pcmInfo, 0)
                snd_pcm_info_set_stream(pcmInfo, SND_PCM_STREAM_CAPTURE)
                guard snd_ctl_pcm_info(ctl, pcmInfo) == 0 else { continue }  // no capture on this device
                var d = AudioCaptureDevice(
                    name: "hw:\(cardID),\(device)", cardIndex: Int(card), cardID: cardID, cardName: cardName,
                    deviceIndex: Int(device), deviceName: String(cString: snd_pcm_info_get_name(pcmInfo)), rates: [],
                    rateRange: nil, formats: [], channels: nil, problem: nil)
                probe(&d)
                out.append(d)
            }
        }
        return out
    }

    static func probe(_ d: inout AudioCaptureDevice) {
        var pcm: OpaquePointer?
        let r = snd_pcm_open(&pcm, d.name, SND_PCM_STREAM_CAPTURE, SND_PCM_NONBLOCK)
        guard r == 0, let pcm else {
            d.problem = "cannot open: \(String(cString: snd_strerror(r)))"
            return
        }
        defer { snd_pcm_close(pcm) }
        var hw: OpaquePointer?
        guard snd_pcm_hw_params_malloc(&hw) == 0, let hw else { return }
        defer { snd_pcm_hw_params_free(hw) }
        guard snd_pcm_hw_params_any(pcm, hw) >= 0 else {
            d.problem = "cannot read hardware parameters"
            return
        }
        var lo: UInt32 = 0
        var hi: UInt32 = 0
        var dir: Int32 = 0
        if snd_pcm_hw_params_get_rate_min(hw, &lo, &dir) == 0, snd_pcm_hw_params_get_rate_max(hw, &hi, &dir) == 0,
            lo <= hi
        {
            d.rateRange = Int(lo)...Int(hi)
        }
        d.rates = commonRates.filter { snd_pcm_hw_params_test_rate(pcm, hw, UInt32($0), 0) == 0 }
        d.formats = PCMSampleFormat.allCases.filter { snd_pcm_hw_params_test_format(pcm, hw, $0.alsa) == 0 }.map(
            \.rawValue)
        if snd_pcm_hw_params_get_channels_min(hw, &lo) == 0, snd_pcm_hw_params_get_channels_max(hw, &hi) == 0, lo <= hi
        {
            d.channels = Int(lo)...Int(hi)
        }
    }
}
