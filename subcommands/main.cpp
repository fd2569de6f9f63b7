// gpumem: GPU memory operations from the command line.
#include "app.hpp"

int main(int argc, char** argv) { return gpumem::cli::run_gpumem(argc, argv); }
