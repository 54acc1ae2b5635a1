// CapturePhases: where the wall time of capturing graphs goes, per shape and for a whole
// schedule (ShapeGraphRunner::phases()), so that every report of capture seconds can say why.
#pragma once

namespace grt {

struct CapturePhases {
  double prepare = 0;      // staging the shape's dummy batch into the persistent inputs (it waits until
                           // the device has copied the previous staging, so without a wait per shape
                           // it can hold device time)
  double warmup = 0;       // eager warm-up forwards: issuing them, and waiting for them when synchronised
  double memory = 0;       // before_capture: switching graph memory (a new VMM space)
  double record = 0;       // the forward under stream capture: begin/end capture, launches, eager steps' host
                           // work, plans a library makes for a new shape (cuBLASLt), and any driver
                           // lock it waits for (an instantiation beside it can hold one)
  double instantiate = 0;  // instantiating the recorded segments (on worker threads when asynchronous:
                           // then not on the capturing thread's wall time); CUDA sometimes waits
                           // there for the device to finish queued work
  double instantiate_wait = 0;  // the capturing thread waiting for instantiation workers
  double sync = 0;              // waiting for the capture stream (device work: warm-ups, eager steps)
  double other = 0;             // the rest of the wall time: bookkeeping, progress, failed shapes

  void add(const CapturePhases& o) {
    prepare += o.prepare;
    warmup += o.warmup;
    memory += o.memory;
    record += o.record;
    instantiate += o.instantiate;
    instantiate_wait += o.instantiate_wait;
    sync += o.sync;
    other += o.other;
  }
};

}  // namespace grt
