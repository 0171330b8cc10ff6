cvo func=exp src=0 dst=0 len=65536
memset cache=2 entry=0 a=0 b=0 c=0
cvo func=exp src=0 dst=0 len=8 relu=1
gemv dest 5
memcpy dest=0 src=0 desc=0 fshape=0 +from_host +to_host
lbl: .word 0xffffffffffffffff ; comment
