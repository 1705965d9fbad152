"""The tool, host and device sections the peers scripts' host tests build their sample reports with:
an H200 as tkprobe describes one, from a test run."""
TOOL = {"version": "test", "git_sha": "0000000", "command_line": "test", "started_at": "2026-01-01T00:00:00Z",
        "seed": 1}
HOST = {"hostname": "test", "driver": "unavailable", "cuda_runtime": "13.0"}
DEVICE = {"index": 0, "name": "NVIDIA H200", "cc": "9.0", "sms": 132, "l2_bytes": 62914560, "smem_per_sm": 233472,
          "smem_per_block_optin": 232448, "sm_clock_max_mhz": 1980, "mem_clock_mhz": 3201, "power_limit_w": 700.0}
