// Host implementation of the subset of the Ascend C API (CANN 9.0.0 names and signatures)
// that pto-op's generated kernels use, written for pto-op from the public API
// documentation. Header-only C++17.
//
// Like Ascend C's CPU debug mode, a kernel compiled against it runs on the host, one block
// at a time. Unlike a plain emulation it enforces what the device would: the capacity of
// each buffer (TPipe::InitBuffer totals against the device profile, passed in as
// ASCENDC_HOST_{UB,L1,L0A,L0B,L0C}_BYTES), 32-byte alignment of DataCopy lengths and UB
// addresses, queue discipline (DeQue of an empty queue, AllocTensor past the queue's
// buffers, tensors not freed at the end), vector repeat limits, bounds of every access.
// A violation prints one line, "ascendc-host: block B: inst N (...): API: rule: detail",
// and exits with status 3.
#ifndef ASCENDC_HOST_KERNEL_OPERATOR_H
#define ASCENDC_HOST_KERNEL_OPERATOR_H

#include "ascendc_host/common.h"
#include "ascendc_host/tensor.h"
#include "ascendc_host/copy.h"
#include "ascendc_host/vector.h"
#include "ascendc_host/logic.h"
#include "ascendc_host/sort.h"
#include "ascendc_host/cube.h"

#endif  // ASCENDC_HOST_KERNEL_OPERATOR_H
