gmev dest=0
gemv dest=0 bogus=1
cvo func=exp src=0 dst=0 len=8 src=1
gemv dest=0 src=0 wshape=0
cvo func=exp src=0x1g dst=0 len=1
.word 18446744073709551616
cvo func=exp src=0 dst=0 len=65536
memset cache=2 entry=0 a=0 b=0 c=0
cvo func=exp src=0 dst=0 len=8 relu=1
gemv dest 5
memcpy dest=0 src=0 desc=0 fshape=0 +from_host +to_host
lbl: .word 0xffffffffffffffff ; comment
