// Kernel parameters of paged extend attention, shared by the SIMT kernel (attention_extend.cu),
// the WMMA tensor-core kernel (attention_extend_tc.cu) and the FlashAttention-2 style kernel
// (attention_extend_fa2.cu), and the choice between them.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"

namespace grt::cuda {

struct ExtendParams {
  const void* q;
  int64_t q_stride;
  const void* k_cache;
  const void* v_cache;
  int64_t num_slots, max_reqs, max_context, num_rows;
  const int32_t* req_to_token;
  const int32_t* req_pool_indices;
  const int32_t* prefix_lens;
  const int32_t* extend_lens;
  const int32_t* extend_start_loc;
  void* out;
  int nq, nkv, hd, group, num_reqs, max_extend_len, ld;  // ld: shared row pitch (SIMT kernel)
  float scale_log2;
  bool pair_q_tiles;  // FA2: each block runs q tiles (last - x, x) instead of one (extend_fa2_kernel)
  // prepare_q: q holds the raw q (the qkv GEMM's columns) and the kernel applies prepare_qkv_'s q
  // part to each Q tile in shared memory as it lands: the RMSNorm by q_norm (when not null, eps
  // q_eps), then RoPE at positions[row] from cos_sin ([max_positions, hd]; a position outside it:
  // no RoPE), the same bits as the prepare kernel. Only the warp-specialised wgmma kernels that run
  // one q tile a block with two consumers take it, bf16 (ws_prepares_q); launch_extend_wgmma_ws
  // refuses it otherwise.
  bool prepare_q;
  const void* q_norm;
  float q_eps;
  const int32_t* positions;
  const float* cos_sin;
  int64_t max_positions;
};

// Launches the tensor-core kernel when it serves this case (bf16/f16, head_dim 64 or 128,
// 16-byte aligned rows) and returns true; false leaves the work to the SIMT kernel.
bool launch_extend_tensor_core(cudaStream_t stream, const ExtendParams& p, DType dtype);

// Whether the FA2 kernel serves this case: bf16/f16, head_dim 64 or 128, 16-byte aligned q,
// cache and output rows, slots and positions that fit i32, a positive scale.
bool fa2_supports(const ExtendParams& p, DType dtype);
// Query tiles of the FA2 kernel: 64 rows on 4 warps of 16, 128 rows on 8 warps of 16, 128 rows
// on 4 warps of 32. The V2 kernels (issue 18, session 4) add a deeper cp.async ring with one
// barrier per key tile and lazy rescaling of O: kV2Q64 = kQ64 so (2 stages), kV2 = kQ128W4 so
// (3 stages), kV2K64 = kV2 with 64-key tiles at head_dim 128 (2 stages), kV2Exp = kV2 with a
// quarter of exp2 on the FMA pipe instead of MUFU.
enum class Fa2Tile { kQ64, kQ128, kQ128W4, kV2Q64, kV2, kV2K64, kV2Exp };
// Launches the FA2 kernel; an unsupported case (fa2_supports false) is an Error.
void launch_extend_fa2(cudaStream_t stream, const ExtendParams& p, DType dtype, Fa2Tile tile);

// The wgmma kernels (attention_extend_wgmma.cu, attention_extend_ws.cu): sm_90 GPUs, otherwise as
// fa2_supports.
bool wgmma_supports(const ExtendParams& p, DType dtype);
// fa3-wg / fa3-wg2: 128-row q tiles (2 warpgroups), 2 stages, no overlap of softmax and GEMMs,
// registers for 1 / 2 blocks per multiprocessor. fa3-ov (issue 18, session 5): 128-row tiles,
// 4 stages, each warpgroup's softmax overlapped with its own O GEMM and the next S GEMM, 1 block
// per multiprocessor. fa3-ov64: the same loop on 64-row tiles (1 warpgroup, 3 stages) for short
// prompts, twice the blocks. fa3-ovq: fa3-ov with Q in registers (S reads only K from shared
// memory). fa3-ws (issue 18, session 6): warp-specialised, a producer warpgroup gathering Q and
// a 4-stage K/V ring under mbarriers (cp.async per 16 bytes), two consumer warpgroups running the
// fa3-ov loop without a block barrier, setmaxnreg 72/216; fa3-wsp: the same with the consumers'
// GEMM issues taking turns (pingpong); fa3-wsn / fa3-wsnp: fa3-ws / fa3-wsp with the O GEMM as
// m64n128 instructions at head_dim 128 (at 64 the same as fa3-ws / fa3-wsp). Issue 18, session 8:
// fa3-ws128 / fa3-ws128p / fa3-ws128n: fa3-ws / fa3-wsp / fa3-wsn with 128-key ring stages (S as
// m64n128 instructions; 3 stages at head_dim 128, 4 at 64); fa3-ws128s: fa3-ws128 on a persistent
// grid (one block per multiprocessor, unpaired q tiles longest first in alternating rounds).
// Session 9: fa3-ws128ns: fa3-ws128n on that grid; fa3-ws128nsq: fa3-ws128ns with each q tile's
// Q released once its last S GEMM is done (not its last O GEMM) and the next q tile's first key
// tile gathered before its Q, so the next Q loads under the last O GEMM (same bits as fa3-ws128ns);
// fa3-ws128nsk: fa3-ws128nsq with K and V of a ring stage under their own full / empty barriers
// (K freed after its S GEMM, V after its O GEMM: more load lead from the same 3 stages; same bits);
// fa3-ws128nso: fa3-ws128ns with the P pack and the stage release made to depend on the softmax's
// row sums, meant to keep the softmax under the O GEMM (same bits; measured: ptxas still runs it
// after the O wait, -7%);
// fa3-ws128ns2: fa3-ws128ns with two P register sets in turn, the softmax of the next key tile
// packing into the set the in-flight O GEMM does not read (same bits; measured: ptxas serialised
// every wgmma of it, -9%). Both kept for A/B only. fa3-wsnh / fa3-wsnph: fa3-wsn / fa3-wsnp with
// a never-taken branch on the row sums before the O GEMM's wait, so that ptxas keeps the softmax
// under the O GEMM (it does in the cubin; 64-key stages: registers fit); fa3-wsnsh: fa3-wsnh on
// the persistent grid (same bits as fa3-wsn / fa3-wsnp; not yet measured). Session 12: fa3-wsn64:
// fa3-wsn with one consumer warpgroup on 64-row q tiles (256 threads; twice the blocks of a short
// extend, no key tile wholly in a consumer's future; same bits as fa3-wsn).
enum class WgVariant {
  kWg,
  kWg2,
  kOv,
  kOv64,
  kOvQ,
  kWs,
  kWsP,
  kWsN,
  kWsNP,
  kWs128,
  kWs128P,
  kWs128N,
  kWs128S,
  kWs128NS,
  kWs128NSQ,
  kWs128NSK,
  kWs128NSO,
  kWs128NS2,
  kWsNH,
  kWsNSH,
  kWsNPH,
  kWsN64
};
// Multiprocessors of the current device (read once per device; threads may race to fill the cache).
int extend_multiprocessors();
// Rows of a variant's q tile (the unit of pairing and of the grid).
int wgmma_q_tile(WgVariant v);
// Launches it (pairing as the FA2 kernels: p.pair_q_tiles); an unsupported case is an Error.
void launch_extend_wgmma(cudaStream_t stream, const ExtendParams& p, DType dtype, WgVariant v);
// The warp-specialised variants (kWs .. kWsNPH; attention_extend_ws.cu), which
// launch_extend_wgmma hands over after its checks; any other variant is an Error.
void launch_extend_wgmma_ws(cudaStream_t stream, const ExtendParams& p, DType dtype, WgVariant v);
// Whether variant v prepares the Q tiles itself for p (ExtendParams::prepare_q's fields set): a
// warp-specialised variant with one q tile a block and two consumers (fa3-ws, wsp, wsn, wsnp,
// ws128, ws128p, ws128n, wsnh, wsnph; not the persistent ones, not fa3-wsn64), bf16, head_dim 64 or
// 128, 16-byte aligned q_norm and cos_sin.
bool ws_prepares_q(const ExtendParams& p, DType dtype, WgVariant v);

enum class ExtendKernel {
  kFa2Q64,
  kFa2Q128,
  kFa2Q128W4,
  kFa2V2Q64,
  kFa2V2,
  kFa2V2K64,
  kFa2V2Exp,
  kWgmma,
  kWgmma2,
  kWgmmaOv,
  kWgmmaOv64,
  kWgmmaOvQ,
  kWgmmaWs,
  kWgmmaWsP,
  kWgmmaWsN,
  kWgmmaWsNP,
  kWgmmaWs128,
  kWgmmaWs128P,
  kWgmmaWs128N,
  kWgmmaWs128S,
  kWgmmaWs128NS,
  kWgmmaWs128NSQ,
  kWgmmaWs128NSK,
  kWgmmaWs128NSO,
  kWgmmaWs128NS2,
  kWgmmaWsNH,
  kWgmmaWsNSH,
  kWgmmaWsNPH,
  kWgmmaWsN64,
  kTensorCore,
  kSimt
};
const char* extend_kernel_name(ExtendKernel k);
// Whether FA2 blocks pair a long and a short q tile (equal causal work per block) for this case
// and q tile height: wherever the halved grid still fills >= 90% of two blocks per
// multiprocessor (short extends keep one tile per block, heaviest first).
// GRAPHRT_EXTEND_PAIRING=0/1 forces it (tests).
bool fa2_pair_q_tiles(const ExtendParams& p, int q_tile);

// The kernel attention_extend runs for this case: where fa2_supports, on an sm_90 GPU a wgmma
// kernel by the blocks B of the 128-row grid against the multiprocessors M (where B <= M/2
// fa3-wsn64 at head_dim 128, fa3-ov64 at 64; above it fa3-ws128p at head_dim 64; at 128 fa3-wsnp
// where B <= M, fa3-ws128ns where B > M),
// elsewhere FA2 (fa2-v2 when its blocks fill >= 90% of two per multiprocessor, else fa2-v2q64);
// else the WMMA kernel where it serves, else SIMT. The environment variable GRAPHRT_EXTEND_KERNEL
// forces one for benchmarks and tests: fa2-q64, fa2-q128, fa2-q128w4, fa2-v2q64, fa2-v2,
// fa2-v2k64, fa2-v2e, fa3-wg, fa3-wg2, fa3-ov, fa3-ov64, fa3-ovq, fa3-ws, fa3-wsp, fa3-wsn,
// fa3-wsnp, fa3-ws128, fa3-ws128p, fa3-ws128n, fa3-ws128s, fa3-ws128ns, fa3-ws128nsq, fa3-ws128nsk,
// fa3-ws128nso, fa3-ws128ns2, fa3-wsnh, fa3-wsnsh, fa3-wsnph, fa3-wsn64, tc, simt;
// "auto-v1": the session-3 choice (fa2-q128w4 or fa2-q64); "auto-fa2": the FA2 choice on any GPU; "auto-s4": the session-4 choice (fa3-wg2 where B > M, else fa3-wg);
// "auto-s5": the session-5 choice (fa3-ov64 where B <= M/2, fa3-wg2 where B > M at head_dim 128,
// else fa3-ov); "auto-s7": the choice of sessions 6 and 7 (fa3-ov64 where B <= M/2, fa3-wsnp
// where B <= M, fa3-ws at head_dim 128 and fa3-ov at 64 where B > M); "auto-s8": the choice of
// session 8 (as the default, but fa3-ws128s where B > M at head_dim 128); "auto-s9a": the choice
// after helper s9-attn's run (fa3-ws128ns where B > M at head_dim 128); "auto-s11": the choice
// of sessions 9-11 (fa3-ov64 where B <= M/2); "auto-s12w": no B <= M/2 bucket (what M/2 < B <= M
// runs); "auto-s12n": fa3-wsn64 where B <= M/2 at both head dims; unset or "auto": the default
// choice. Forcing a kernel that cannot serve the case
// is an Error.
ExtendKernel choose_extend_kernel(const ExtendParams& p, DType dtype);

}  // namespace grt::cuda
