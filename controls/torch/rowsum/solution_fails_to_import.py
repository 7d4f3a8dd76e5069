# Setup control: raises while its module is imported (a load_inline build error looks the same).
# kcv verify exits 2 with one line naming the exception.
raise RuntimeError("this solution does not build")
