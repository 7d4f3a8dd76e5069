# Inputs that keep their structure (docs/kernelbench.md, "Inputs keep their structure"): problems
# whose get_inputs() makes triangular or symmetric matrices, as KernelBench's level1/13-15 do. A
# kernel that reads only the triangle its problem promises is legitimate and must pass every gate
# (before the structure was kept, the upper one failed values, nonfinite and stateless); one that
# gets its own problem's inputs wrong must still fail, in the problem's own calling convention.
# A kernel that never forms the products with promised zeros (k from row to column, as the
# leaderboard's level1/14-15 kernels) passes nonfinite too; one that reads NaN as 0 does not
# (docs/nonfinite-classes.md, "Structural zeros").
set(d ${CONTROL_DIR})
kcv_torch_control(NAME structured.upper_reads_triangles PROBLEM ${d}/problem_upper.py
                  SOLUTION ${d}/solution_upper_reads_triangles.py EXPECT PASS BASELINE pass)
kcv_torch_control(NAME structured.upper_drops_diagonal PROBLEM ${d}/problem_upper.py
                  SOLUTION ${d}/solution_upper_drops_diagonal.py EXPECT FAIL FAILS numerics values OWN numerics
                  BASELINE fail)
kcv_torch_control(NAME structured.lower_reads_triangles PROBLEM ${d}/problem_lower.py
                  SOLUTION ${d}/solution_lower_reads_triangles.py EXPECT PASS BASELINE pass)
kcv_torch_control(NAME structured.symmetric_reads_upper PROBLEM ${d}/problem_symmetric.py
                  SOLUTION ${d}/solution_symmetric_reads_upper.py EXPECT PASS BASELINE pass)
kcv_torch_control(NAME structured.symmetric_forgets_lower PROBLEM ${d}/problem_symmetric.py
                  SOLUTION ${d}/solution_symmetric_forgets_lower.py EXPECT FAIL FAILS numerics values OWN numerics
                  BASELINE fail)
kcv_torch_control(NAME structured.upper_skips_zero_products PROBLEM ${d}/problem_upper.py
                  SOLUTION ${d}/solution_upper_skips_zero_products.py EXPECT PASS BASELINE pass)
kcv_torch_control(NAME structured.lower_skips_zero_products PROBLEM ${d}/problem_lower.py
                  SOLUTION ${d}/solution_lower_skips_zero_products.py EXPECT PASS BASELINE pass)
kcv_torch_control(NAME structured.upper_launders_nan PROBLEM ${d}/problem_upper.py
                  SOLUTION ${d}/solution_upper_launders_nan.py EXPECT FAIL FAILS nonfinite OWN nonfinite BASELINE pass)
