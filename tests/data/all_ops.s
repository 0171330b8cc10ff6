# Every opcode and every CVO function at least once, as a program the validator
# accepts (pccx validate checks a bare program without its descriptors).
# tests/scripts/cli_isa.sh assembles it, disassembles the result and assembles
# that again: the two binaries must be identical.
#
# L2 map (words of 4 FP32): x 0x00000 (512), y 0x00400 (64), scalars 0x00500..,
# SFU outputs 0x00700.. (4 x 64), copy of x 0x00800 (512), one word 0x00A00,
# x*S 0x00C00 (512), X 0x01000 (4 x 512), GEMM out 0x02000 (4 x 4), f32t out 0x03000 (16).

shapes:
	memset cache=fmap entry=0 a=2048 b=1 c=1        ; x: one row of 2048
	memset cache=fmap entry=1 a=2048 b=4 c=1        ; X: four rows
	memset cache=fmap entry=2 a=256 b=1 c=1         ; y: 256 elements
	memset cache=weight entry=0 a=256 b=2048 c=0    ; q4 (256, 2048)
	memset cache=weight entry=1 a=16 b=0x800 c=1    ; f32 (16, 2048)
	memset cache=weight entry=2 a=64 b=2048 c=2     ; f32t (64, 2048)
	.word 0x3030001000100010                        # memset cache=fmap entry=3 a=1 b=1 c=1

load:
	memcpy dest=0x00000 src=0 desc=0 fshape=0 +from_host
	memcpy dest=4096 src=0 desc=1 fshape=1 +from_host +async
	memcpy dest=0x00800 src=0x00000 desc=0 fshape=0      # L2 -> L2 copy of x
	memcpy fshape=3 desc=0 src=0x00000 dest=0x00A00      # fields in any order

matmul:
	gemv dest=0x00400 src=0x00000 wshape=0 fshape=0 +w_scale +findemax
	gemm dest=0x02000 src=0x01000 wshape=1 fshape=1
	gemv dest=0x03000 src=0x00800 wshape=2 fshape=0 +accm

softmax: cvo func=max src=0x00400 dst=0x00500 len=256
	cvo func=exp src=0x00400 dst=0x00400 len=256 +sub_emax
	cvo func=sum src=0x00400 dst=0x00501 len=256
	cvo func=scale src=0x00400 dst=0x00400 len=256 +recip_scale

rmsnorm:
	cvo func=sumsq src=0x00000 dst=0x00502 len=2048 +recip_scale
	cvo func=add src=0x00503 dst=0x00502 len=0 +sreg
	cvo func=rsqrt src=0 dst=0x00502 len=0 +sreg
	cvo func=scale src=0x00000 dst=0x00C00 len=2048
	cvo func=mul src=0x00800 dst=0x00C00 len=0x800
	cvo func=smul src=0x00800 dst=0x00C00 len=0x800

others:
	cvo func=gelu src=0x03000 dst=0x03000 len=64 +relu
	cvo func=sqrt src=0x00400 dst=0x00700 len=256
	cvo func=sin src=0x00400 dst=0x00740 len=256
	cvo func=cos src=0x00400 dst=0x00780 len=256 +accm
	cvo func=recip src=0x00400 dst=0x007C0 len=256 +async
	cvo func=tanh src=0x02000 dst=0x02000 len=16
	cvo func=lds src=0x00500 dst=0x00504 len=0
	cvo func=lds src=0x00500 dst=0x00504 len=3
	cvo func=lds src=0x00400 dst=0x00504 len=255          ; element 255 of y: word 0x0043F
	cvo func=max src=0x00503 dst=0x00504 len=0 +sreg
	cvo func=exp src=0 dst=0x00504 len=0 +sreg +relu
	cvo func=scale src=0x00503 dst=0x00504 len=0 +sreg +recip_scale
	cvo func=mul src=0x00503 dst=0x00504 len=0 +sreg

store:
	memcpy dest=0 src=0x00400 desc=2 fshape=2 +to_host
