"""What the kit ships: the student handout, and the Gradescope autograder zip with the
grading it runs in Gradescope's container.

Each is an import closure (grader.batch.import_graph), never a list kept by hand. It may
import every room below it, grader.batch.grade included (the Gradescope runner grades
through a session), and solutions/ (to keep the model answer out of the handout).
"""
